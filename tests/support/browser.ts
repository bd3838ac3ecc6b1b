import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { CHROMIUM_PATH } from '../../scripts/system-tiers.ts';

/**
 * Debian's chromium driven by playwright-core (no browser download): headless, no sandbox (the tests run as root
 * in CI), and none of the background traffic a fresh profile would start. Playwright gives each launch an empty
 * profile of its own.
 */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-dev-shm-usage',
    ],
  });
}

/** Everything the page reports as an error: console.error lines, uncaught exceptions and failed page loads. */
export function pageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console.error: ${message.text()}`);
  });
  page.on('pageerror', (error) => errors.push(`uncaught: ${error.message}`));
  return errors;
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  readonly id: string;
  readonly impact: string | null;
  readonly help: string;
  readonly nodes: number;
}

/**
 * Runs axe-core (WCAG 2.x A and AA rules and best practices) in the page and returns its serious and critical
 * violations. axe is evaluated through the DevTools protocol, which the page's Content-Security-Policy (no
 * inline script) does not govern.
 */
export async function seriousA11yViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(axeSource);
  // A string, because it runs in the page (whose globals the Node-side types do not describe).
  return page.evaluate(`axe.run(document, { resultTypes: ['violations'] }).then((result) => result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.length })))`) as Promise<AxeViolation[]>;
}
