/** A few lines of SVG instead of a chart library: line charts with optional log axes, enough to read a trend. */
export interface Series {
  readonly name: string;
  readonly points: readonly (readonly [number, number])[];
}

export interface LineChart {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly series: readonly Series[];
  readonly logX?: boolean;
  readonly logY?: boolean;
  /** Category labels for x (the x values are then indexes). */
  readonly xTicks?: readonly string[];
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];
const W = 720;
const H = 420;
const M = { left: 70, right: 190, top: 40, bottom: 55 };

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function ticks(min: number, max: number, log: boolean): number[] {
  if (log) {
    const out: number[] = [];
    for (let e = Math.floor(Math.log10(min)); e <= Math.ceil(Math.log10(max)); e += 1) out.push(10 ** e);
    return out;
  }
  const span = max - min || 1;
  const step = 10 ** Math.floor(Math.log10(span / 5));
  const nice = [1, 2, 5, 10].map((m) => m * step).find((s) => span / s <= 6) ?? step * 10;
  const out: number[] = [];
  for (let v = Math.ceil(min / nice) * nice; v <= max + 1e-9; v += nice) out.push(Number(v.toPrecision(6)));
  return out;
}

const fmt = (v: number): string => (Math.abs(v) >= 1000 ? `${v / 1000}k` : String(v));

/** Renders a line chart; points with non-positive values are dropped on a log axis. */
export function lineChart(chart: LineChart): string {
  const keep = (x: number, y: number) =>
    Number.isFinite(x) && Number.isFinite(y) && (!chart.logX || x > 0) && (!chart.logY || y > 0);
  const series = chart.series.map((s) => ({ ...s, points: s.points.filter(([x, y]) => keep(x, y)) }));
  const all = series.flatMap((s) => s.points);
  const xs = all.map(([x]) => x);
  const ys = all.map(([, y]) => y);
  let [x0, x1] = [Math.min(...xs, chart.logX ? 1 : 0), Math.max(...xs, 1)];
  let [y0, y1] = [chart.logY ? Math.min(...ys, 1) : 0, Math.max(...ys, chart.logY ? 10 : 1)];
  if (chart.logY) [y0, y1] = [10 ** Math.floor(Math.log10(y0)), 10 ** Math.ceil(Math.log10(y1))];
  if (chart.logX) [x0, x1] = [10 ** Math.floor(Math.log10(x0)), 10 ** Math.ceil(Math.log10(x1))];
  if (x0 === x1) x1 = x0 + 1;
  const sx = (x: number) =>
    M.left +
    ((chart.logX ? Math.log10(x) - Math.log10(x0) : x - x0) /
      (chart.logX ? Math.log10(x1) - Math.log10(x0) : x1 - x0)) *
      (W - M.left - M.right);
  const sy = (y: number) =>
    H -
    M.bottom -
    ((chart.logY ? Math.log10(y) - Math.log10(y0) : y - y0) /
      (chart.logY ? Math.log10(y1) - Math.log10(y0) : y1 - y0 || 1)) *
      (H - M.top - M.bottom);
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
  );
  parts.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  parts.push(
    `<text x="${W / 2 - M.right / 2 + M.left / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${esc(chart.title)}</text>`,
  );
  for (const t of ticks(y0, y1, chart.logY === true)) {
    const y = sy(t);
    parts.push(
      `<line x1="${M.left}" x2="${W - M.right}" y1="${y}" y2="${y}" stroke="#ddd"/><text x="${M.left - 6}" y="${y + 4}" text-anchor="end">${fmt(t)}</text>`,
    );
  }
  if (chart.xTicks) {
    chart.xTicks.forEach((label, i) =>
      parts.push(`<text x="${sx(i)}" y="${H - M.bottom + 18}" text-anchor="middle">${esc(label)}</text>`),
    );
  } else {
    for (const t of ticks(x0, x1, chart.logX === true))
      parts.push(`<text x="${sx(t)}" y="${H - M.bottom + 18}" text-anchor="middle">${fmt(t)}</text>`);
  }
  parts.push(
    `<line x1="${M.left}" x2="${W - M.right}" y1="${H - M.bottom}" y2="${H - M.bottom}" stroke="#333"/><line x1="${M.left}" x2="${M.left}" y1="${M.top}" y2="${H - M.bottom}" stroke="#333"/>`,
  );
  parts.push(`<text x="${(M.left + W - M.right) / 2}" y="${H - 12}" text-anchor="middle">${esc(chart.xLabel)}</text>`);
  parts.push(
    `<text transform="translate(16 ${(M.top + H - M.bottom) / 2}) rotate(-90)" text-anchor="middle">${esc(chart.yLabel)}</text>`,
  );
  series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length]!;
    if (s.points.length > 0) {
      parts.push(
        `<polyline fill="none" stroke="${color}" stroke-width="2" points="${s.points.map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(' ')}"/>`,
      );
      for (const [x, y] of s.points)
        parts.push(`<circle cx="${sx(x).toFixed(1)}" cy="${sy(y).toFixed(1)}" r="3" fill="${color}"/>`);
    }
    const ly = M.top + 10 + i * 20;
    parts.push(
      `<rect x="${W - M.right + 12}" y="${ly - 9}" width="14" height="4" fill="${color}"/><text x="${W - M.right + 32}" y="${ly - 3}">${esc(s.name)}</text>`,
    );
  });
  parts.push('</svg>');
  return parts.join('\n');
}
