/**
 * What the console's browser tests share: a real Pithos (on a fixed port, so that a page can
 * follow it across a restart), Debian's Chromium (/usr/bin/chromium, never a downloaded one)
 * driven by playwright-core, one page, and small helpers. The bindings below are live: the
 * test files import them and see them once start() has run.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { freePort } from '../helpers/net.js';
import { PithosServer, ROOT } from '../helpers/server.js';

const CHROMIUM = process.env.PITHOS_CHROMIUM ?? '/usr/bin/chromium';
/** Screenshots go to docs/console/ with PITHOS_SCREENSHOTS=1, else to a temporary directory. */
export const SHOTS = process.env.PITHOS_SCREENSHOTS === '1' ? path.join(ROOT, 'docs', 'console') : mkdtempSync(path.join(os.tmpdir(), 'pithos-shots-'));
export const AXE = readFileSync(path.join(ROOT, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');

export let server: PithosServer;
export let browser: Browser;
export let page: Page;
export const pageErrors: string[] = [];
/** Bodies of the row queries the page sent (to check that paging is the server's). */
export const queries: Record<string, unknown>[] = [];
/** When the page sent each API request (not its own files): the console's load on the server. */
const apiRequests: number[] = [];
export const sentSince = (t0: number): number => apiRequests.filter((t) => t >= t0).length;

export async function start(): Promise<void> {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does this)`);
  mkdirSync(SHOTS, { recursive: true });
  server = await PithosServer.start({ args: ['--port', String(await freePort())] });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
  });
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.setDefaultTimeout(10_000);
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  page.on('console', (m) => {
    // A 4xx the page asked for on purpose (a wrong token, a missing object) is logged by Chromium as a failed load.
    if (
      m.type() === 'error' &&
      !/status of (4\d\d)/.test(m.text()) &&
      !/ERR_CONNECTION_REFUSED|ERR_EMPTY_RESPONSE|network error|Failed to fetch/.test(m.text())
    )
      pageErrors.push(m.text());
  });
  page.on('request', (r) => {
    if (!new URL(r.url()).pathname.startsWith('/console')) apiRequests.push(Date.now());
    if (/\/tables\/[^/]+\/query$/.test(new URL(r.url()).pathname)) queries.push(JSON.parse(r.postData() ?? '{}') as Record<string, unknown>);
  });
}

export async function stop(): Promise<void> {
  await browser?.close();
  await server?.close();
  if (process.env.PITHOS_SCREENSHOTS !== '1') rmSync(SHOTS, { recursive: true, force: true });
}

/** Signs in through the form. */
export async function signIn(): Promise<void> {
  await page.goto(`${server.base}/console/`);
  await page.fill('#token', server.token);
  await page.click('button[type=submit]');
  await page.locator('[data-figure="key_count"]').waitFor();
}

export const go = async (hash: string): Promise<void> => {
  await page.goto(`${server.base}/console/#${hash}`);
  await page.locator('main h1').waitFor();
};

/** Clicks Confirm (or Cancel) in the confirmation dialog, after checking its text. */
export async function answerDialog(expect: RegExp, ok: boolean): Promise<void> {
  const dlg = page.locator('#confirm');
  await dlg.waitFor({ state: 'visible' });
  assert.match((await page.locator('#confirm-text').textContent()) ?? '', expect);
  await page.click(ok ? '#confirm-ok' : '#confirm-cancel');
  await dlg.waitFor({ state: 'hidden' });
}

export const ok = (sel: string, text: string | RegExp) => page.locator(`${sel}.msg.ok`).filter({ hasText: text }).waitFor();
export const err = (sel: string, text: string | RegExp) => page.locator(`${sel}.msg.error`).filter({ hasText: text }).waitFor();
export const data = async (p: string): Promise<unknown> => {
  const r = await server.req('GET', p);
  assert.equal(r.status, 200, `GET ${p}: ${r.status} ${r.raw}`);
  return r.body.data;
};

/** axe-core's serious and critical findings on the page as it is now (axe injected already). */
export async function axeProblems(): Promise<string[]> {
  return page.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: { run: (ctx: Document, o: object) => Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> };
      }
    ).axe;
    const r = await axe.run(document, { resultTypes: ['violations'] });
    return r.violations
      .filter((x) => x.impact === 'serious' || x.impact === 'critical')
      .map(
        (x) =>
          `${x.id}: ${x.nodes
            .map((n) => n.target.join(' '))
            .slice(0, 3)
            .join(', ')}`,
      );
  });
}

/**
 * The controls (buttons, links, fields, summaries) on the page that a user cannot reach whole
 * without scrolling sideways: each one's box must lie within the window's width and within
 * every ancestor that clips or scrolls (overflow other than visible), in both directions.
 * Controls not drawn (display: none, a closed dialog or menu) are left out, and so is the
 * skip link, which sits off-screen on purpose until it has focus.
 */
export async function clippedControls(): Promise<string[]> {
  return page.evaluate(() => {
    const out: string[] = [];
    const name = (e: Element): string => {
      const label = (e.getAttribute('aria-label') ?? e.textContent ?? '').trim().replace(/\s+/g, ' ').slice(0, 30);
      return `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ''}${label ? ` "${label}"` : ''}`;
    };
    const slack = 0.5;
    for (const el of document.querySelectorAll('button, a[href], input, select, textarea, summary')) {
      if (el.matches('.skip:not(:focus)')) continue;
      const r = el.getBoundingClientRect();
      if ((r.width === 0 && r.height === 0) || getComputedStyle(el).visibility === 'hidden') continue;
      let cut = false;
      for (let a = el.parentElement; !cut && a && a !== document.body && a !== document.documentElement; a = a.parentElement) {
        const s = getComputedStyle(a);
        if (s.overflowX === 'visible' && s.overflowY === 'visible') continue;
        const b = a.getBoundingClientRect();
        const cutX = s.overflowX !== 'visible' && (r.left < b.left - slack || r.right > b.right + slack);
        const cutY = s.overflowY !== 'visible' && (r.top < b.top - slack || r.bottom > b.bottom + slack);
        cut = cutX || cutY;
        if (cut)
          out.push(
            `${name(el)} (x ${Math.round(r.left)}–${Math.round(r.right)}) is cut by ${name(a).split(' ')[0]} (x ${Math.round(b.left)}–${Math.round(b.right)}, overflow ${s.overflowX}/${s.overflowY})`,
          );
      }
      if (!cut && (r.left < -slack || r.right > window.innerWidth + slack))
        out.push(`${name(el)} spans x ${Math.round(r.left)}–${Math.round(r.right)} in a ${window.innerWidth} px window`);
    }
    return out;
  });
}
