import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

/**
 * Debian's Chromium (`apt-get install chromium`; `.ci/run` installs it), driven by playwright-core:
 * Playwright's own browser download cannot reach its servers here. CHROMIUM_PATH names another binary.
 * Missing, what needs it fails and says so (the tests never skip).
 */
export async function launchChromium(): Promise<Browser> {
  const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (!existsSync(executablePath)) throw new Error(`no Chromium at ${executablePath}: apt-get install chromium, or set CHROMIUM_PATH`);
  // No sandbox: CI and these machines run as root, where Chromium's sandbox refuses to start.
  return chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

/** Opens the dashboard of the gateway at `baseUrl` and signs in with `adminToken`, as an operator does. */
export async function signInToDashboard(page: Page, baseUrl: string, adminToken: string): Promise<void> {
  await page.goto(`${baseUrl}/admin/`);
  await page.fill('#token', adminToken);
  await page.click('#sign-in-form button[type=submit]');
}
