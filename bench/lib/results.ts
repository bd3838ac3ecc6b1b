import type { Engine } from './harness.ts';
import type { Strategy } from '../strategies/strategy.ts';

/** What a scenario hands back: its figures (written to bench/results/<name>.json), checks and notes. */
export interface ScenarioResult {
  readonly name: string;
  readonly title: string;
  /** ok; failed (a correctness check broke); unavailable (a piece it measures has not landed). */
  readonly status: 'ok' | 'failed' | 'unavailable';
  readonly unavailable?: string;
  /** Broken correctness checks: any makes the run exit non-zero. */
  readonly failures: readonly string[];
  /** What the reader must know to read the figures (sizes used, time bounds, engine errors). */
  readonly notes: readonly string[];
  readonly parameters: Record<string, unknown>;
  readonly rows: readonly Record<string, unknown>[];
  readonly seconds: number;
  /** SVG charts written, as file names under bench/results. */
  readonly charts: readonly { readonly file: string; readonly title: string }[];
  /** When the invocation that produced it started (set in the JSON files; a report may merge invocations). */
  readonly startedAt?: string;
  /** The 1-minute load average while it ran (at start, at end, highest seen): timings are context for it. */
  readonly load?: { readonly start: number; readonly end: number; readonly max: number };
}

/** What every scenario gets. */
export interface RunContext {
  readonly engine: Engine;
  readonly quick: boolean;
  readonly strategies: readonly Strategy[];
  readonly resultsDir: string;
  log(message: string): void;
}

export interface Scenario {
  readonly name: string;
  readonly title: string;
  run(ctx: RunContext): Promise<ScenarioResult>;
}

/** Percentile of a list of numbers (nearest rank). */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export const round = (value: number, digits = 2): number =>
  Number.isFinite(value) ? Math.round(value * 10 ** digits) / 10 ** digits : value;
