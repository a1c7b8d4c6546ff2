import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { useTestServer } from '../helpers/server.js';

/**
 * GraphiQL in a real headless browser, with every request outside the server refused, as in a
 * hospital network without internet. Debian's `chromium` (CI installs it); set CHROMIUM_PATH for
 * another build. Without one, the file is skipped with the reason.
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium && process.env.CI === 'true') throw new Error(`CI needs Chromium at ${CHROMIUM} for the GraphiQL browser test`);
if (!haveChromium) console.warn(`GraphiQL browser test skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`);

const api = await useTestServer();

describe.skipIf(!haveChromium)('GraphiQL in a browser without internet', () => {
  let browser: Browser;
  beforeAll(async () => {
    const { chromium } = await import('playwright-core');
    // Chromium's sandbox needs user namespaces, which containers running as root rarely give.
    browser = await chromium.launch({ executablePath: CHROMIUM, args: process.getuid?.() === 0 ? ['--no-sandbox'] : [] });
  });
  afterAll(() => browser?.close());

  /** A page whose requests may reach only the test server; the others are refused and listed. */
  async function offlinePage(): Promise<{ page: Page; outside: string[] }> {
    const page = await browser.newPage();
    const outside: string[] = [];
    await page.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(api.url) || url.startsWith('blob:') || url.startsWith('data:')) return route.continue();
      outside.push(url);
      return route.abort();
    });
    return { page, outside };
  }

  it('renders the schema explorer once the bearer token is in the header editor, loading nothing from outside', { timeout: 120_000 }, async () => {
    const token = await api.newProject().token();
    const { page, outside } = await offlinePage();
    await page.goto(`${api.url}/graphql`);
    // Pasted, not typed: the editor would close each typed brace and quote a second time.
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    await page.evaluate((text) => navigator.clipboard.writeText(text), JSON.stringify({ Authorization: `Bearer ${token}` }));
    await page.getByText('"Bearer <access token>"', { exact: true }).click();
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.press('ControlOrMeta+V');
    await page.getByLabel(/Re-fetch GraphQL schema/).click();
    await page.getByLabel('Show Documentation Explorer').click();
    const explorer = page.locator('.graphiql-doc-explorer');
    await explorer.getByText('Root Types').waitFor();
    const text = await explorer.innerText();
    expect(text).toContain('query: Query');
    expect(text).toContain('PatientConnection');
    expect(outside).toEqual([]);
  });
});
