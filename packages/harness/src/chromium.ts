import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/**
 * Debian's Chromium (`apt-get install chromium`; `.ci/run` installs it), driven by playwright-core:
 * Playwright's own browser download cannot reach its servers here. CHROMIUM_PATH names another binary.
 * Missing, the tests that need it fail and say so, never skip.
 */
export async function launchChromium(): Promise<Browser> {
  const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (!existsSync(executablePath)) throw new Error(`no Chromium at ${executablePath}: apt-get install chromium, or set CHROMIUM_PATH`);
  // No sandbox: CI and these machines run as root, where Chromium's sandbox refuses to start.
  return chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}
