// fauxton.test.js — Fauxton, served by divan at /_utils, driven in a real
// browser: Debian's chromium, headless, through playwright-core (no browser
// of playwright's own). What a person does in the dashboard, step by step,
// each checked in the page and through the HTTP API, with a screenshot of
// each step kept in $FAUXTON_SHOTS (the C registration passes
// build/TAG/fauxton-shots; default build/fauxton-shots):
//
//   log in as the admin; create a database; create a document in the JSON
//   editor and see it in All Documents; edit it; delete it; add a member in
//   Permissions; replicate one-shot to a new database and see it complete;
//   run a Mango query (through an index made in Fauxton); make a view in
//   Fauxton and see its rows.
//
// Every page waits for elements, never for time. Any response of 500 or
// more, any 4xx the steps do not expect, and any script error in the page
// fail the suite; so does a missing chromium (a test that cannot run is a
// failure).
'use strict';
const { test, run, req, eq, ok } = require('../lib/t');
const fs = require('fs');
const path = require('path');
const { startDivan, ROOT } = require('../lib/divan');

const CHROMIUM = '/usr/bin/chromium';
const SHOTS = path.resolve(ROOT, process.env.FAUXTON_SHOTS || 'build/fauxton-shots');
const WAIT = 20000; // ms for one element (a sanitizer build on a loaded machine is slow)
const DB = 'kitchen', COPY = 'kitchen-copy';

let srv, U, B, ctx, page, profile;
const bad = [];    // responses and page errors nobody expected
let shot = 0;

async function snap(name) {
  shot++;
  await page.screenshot({ path: path.join(SHOTS, `${String(shot).padStart(2, '0')}-${name}.png`) });
}

// Close the notifications (toasts) so they cover nothing the next step
// clicks: each closes on a click.
async function clearToasts() {
  for (const t of await page.$$('.Toastify__toast')) await t.click().catch(() => {});
  await page.waitForSelector('.Toastify__toast', { state: 'detached', timeout: WAIT });
}

// Type text into an Ace editor as a person pastes it: select all, insert.
async function typeInAce(sel, text) {
  await page.click(`${sel} .ace_content`);
  await page.keyboard.press('Control+A');
  await page.keyboard.insertText(text);
  await page.waitForFunction(([id, t]) => window.ace && window.ace.edit(id).getValue() === t, [sel.slice(1), text], { timeout: WAIT });
}

// A browser step: on failure, a screenshot of where it stood.
function step(name, fn) {
  test(name, async () => {
    const t0 = Date.now();
    try {
      await fn();
      if (process.env.T_VERBOSE) console.log(`     ${name}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    } catch (e) {
      if (page) await snap('FAILED-' + name.replace(/[^a-z0-9]+/gi, '-').slice(0, 40)).catch(() => {});
      throw e;
    }
  });
}

// The rows of the results table (Metadata layout): [id, key, value] texts.
const tableRows = () => page.$$eval('#dashboard-lower-content table tbody tr, .table-view-docs tbody tr', (trs) =>
  trs.map((tr) => [...tr.querySelectorAll('td')].slice(2, 5).map((td) => td.textContent.trim())));

test('start: divan, and chromium with a fresh profile', async () => {
  ok(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing: scripts/deps.sh installs Debian's chromium`);
  const { chromium } = require('playwright-core');
  srv = await startDivan();
  U = srv.url;
  B = srv.base;
  fs.mkdirSync(SHOTS, { recursive: true });
  for (const f of fs.readdirSync(SHOTS)) if (f.endsWith('.png')) fs.rmSync(path.join(SHOTS, f));
  profile = fs.mkdtempSync(path.join(process.env.TEST_TMPDIR || require('os').tmpdir(), 'chromium-'));
  ctx = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true, // --headless
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 800 },
  });
  page = ctx.pages()[0] || await ctx.newPage();
  page.setDefaultTimeout(WAIT);
  page.on('response', (r) => {
    const s = r.status(), u = r.url();
    // Fauxton's own probes: a database that does not exist yet
    const expected = s === 404 && r.request().method() === 'GET' && new RegExp(`/${COPY}$`).test(u);
    if (s >= 400 && !expected) bad.push(`${s} ${r.request().method()} ${u}`);
  });
  page.on('pageerror', (e) => bad.push('page error: ' + e.message));
});

step('01 log in as the admin', async () => {
  const res = await page.goto(B + '/_utils');     // redirected to /_utils/
  eq(res.url(), B + '/_utils/');
  eq(res.request().redirectedFrom().url(), B + '/_utils');
  await page.fill('#username', srv.admin.name);
  await page.fill('#password', srv.admin.password);
  await page.click('#submit');
  await page.waitForSelector('.add-new-database-btn');
  await page.waitForSelector('a[href="database/_users/_all_docs"]');
  await snap('logged-in');
  const cookie = (await ctx.cookies()).find((c) => c.name === 'AuthSession');
  ok(cookie, 'the session cookie is set');
  const s = await req('GET', B + '/_session', null, { Cookie: `AuthSession=${cookie.value}` });
  eq(s.json.userCtx.name, srv.admin.name);
  ok(s.json.userCtx.roles.includes('_admin'));
  await clearToasts();
});

step('02 create a database', async () => {
  await page.click('.add-new-database-btn');
  await page.fill('#js-new-database-name', DB);
  await page.click('#js-create-database');
  await page.waitForSelector('text=Database created successfully');
  await page.waitForSelector('text=No Documents Found');
  await snap('database-created');
  ok(page.url().endsWith(`#database/${DB}/_all_docs`), page.url());
  const r = await req('GET', `${U}/${DB}`);
  eq(r.status, 200);
  eq(r.json.doc_count, 0);
  await clearToasts();
});

step('03 create a document in the JSON editor, 04 see it in All Documents', async () => {
  await page.click('a.document-result-screen__toolbar-create-btn');
  await page.waitForSelector('#doc-editor .ace_content');
  await typeInAce('#doc-editor', JSON.stringify({ _id: 'soup', name: 'leek soup', minutes: 40 }, null, 2));
  await snap('new-document');
  await page.click('#doc-editor-actions-panel .save-doc');
  await page.waitForSelector('text=Document saved successfully.');
  await page.waitForSelector('td[title="soup"]');
  await snap('all-documents');
  const rows = await tableRows();
  eq(rows.map((r) => r[0]), ['soup']);
  const d = await req('GET', `${U}/${DB}/soup`);
  eq(d.status, 200);
  eq([d.json.name, d.json.minutes], ['leek soup', 40]);
  ok(d.json._rev.startsWith('1-'));
  ok(rows[0][2].includes(d.json._rev), 'the row shows the rev: ' + rows[0][2]);
  await clearToasts();
});

step('05 edit the document', async () => {
  await page.click('td[title="soup"]');
  await page.waitForSelector('#doc-editor .ace_content');
  await page.waitForFunction(() => window.ace && /"_rev": "1-/.test(window.ace.edit('doc-editor').getValue()));
  const doc = JSON.parse(await page.evaluate(() => window.ace.edit('doc-editor').getValue()));
  eq(doc.minutes, 40);
  doc.minutes = 35;
  await typeInAce('#doc-editor', JSON.stringify(doc, null, 2));
  await snap('edit-document');
  await page.click('#doc-editor-actions-panel .save-doc');
  await page.waitForSelector('text=Document saved successfully.');
  await page.waitForSelector('td[title="soup"]');
  const d = await req('GET', `${U}/${DB}/soup`);
  eq(d.json.minutes, 35);
  ok(d.json._rev.startsWith('2-'), d.json._rev);
  await page.waitForFunction((rev) => document.body.innerText.includes(rev), d.json._rev);
  await clearToasts();
});

step('06 delete the document', async () => {
  await page.click('td[title="soup"]');
  await page.waitForSelector('#doc-editor .ace_content');
  await page.click('#doc-editor-actions-panel button[title="Delete"]');
  await page.waitForSelector('.modal .modal-footer button.btn-primary');
  await snap('delete-document');
  await page.click('.modal .modal-footer button.btn-primary');
  await page.waitForSelector('text=No Documents Found');
  const d = await req('GET', `${U}/${DB}/soup`);
  eq(d.status, 404);
  eq(d.json.reason, 'deleted');
  await clearToasts();
});

step('07 add a member in Permissions', async () => {
  await page.click('#sidebar-content a:has-text("Permissions"), a:has-text("Permissions")');
  await page.waitForSelector('.permissions__members .permissions-add-user input.item');
  await page.fill('.permissions__members .permissions-add-user input.item', 'bob');
  await page.click('.permissions__members .permissions-add-user button[type=submit]');
  await page.waitForSelector('.permissions__members .permissions__entry:has-text("bob")');
  await snap('permissions');
  const s = await req('GET', `${U}/${DB}/_security`);
  eq(s.json.members.names, ['bob']);
  eq(s.json.admins.roles, ['_admin']); // the default CouchDB shows, kept
  await clearToasts();
});

step('08 replicate one-shot to a new database and see it complete', async () => {
  const seed = await req('POST', `${U}/${DB}/_bulk_docs`, { docs: [
    { _id: 'bread', kind: 'bake', minutes: 50 }, { _id: 'pie', kind: 'bake', minutes: 45 },
    { _id: 'salad', kind: 'raw', minutes: 10 }, { _id: 'stew', kind: 'simmer', minutes: 120 }] });
  eq(seed.status, 201);
  await page.goto(B + '/_utils/#/replication/_create');
  await page.selectOption('select#replication-source', 'REPLICATION_SOURCE_LOCAL');
  const source = page.locator('.replication__input-react-select input[role=combobox]');
  await source.fill(DB);
  await page.waitForSelector(`.Select-option:has-text("${DB}")`);
  await source.press('Enter');
  eq(await page.inputValue('input[name="source-name"]'), DB);
  await page.selectOption('#select-replication-source-auth', 'BASIC_AUTH');
  await page.fill('#replication-source-auth-username', srv.admin.name);
  await page.fill('#replication-source-auth-password', srv.admin.password);
  await page.selectOption('div#replication-target select', 'REPLICATION_TARGET_NEW_LOCAL_DATABASE');
  await page.fill('input.replication__new-input', COPY);
  await page.selectOption('#select-replication-target-auth', 'BASIC_AUTH');
  await page.fill('#replication-target-auth-username', srv.admin.name);
  await page.fill('#replication-target-auth-password', srv.admin.password);
  await snap('replication-form');
  await page.click('#replicate');
  await page.waitForSelector(`text=Replication from ${DB} to ${COPY} has been scheduled.`);
  // the list shows the state it read; Refresh reads it again until it is done
  const row = page.locator(`tr:has-text("/${COPY}")`);
  await row.waitFor();
  const deadline = Date.now() + 3 * WAIT;
  while (!/Completed/.test(await row.innerText())) {
    ok(Date.now() < deadline, 'the replication never showed Completed: ' + await row.innerText());
    await clearToasts();
    await Promise.all([page.waitForResponse((r) => r.url().includes('/_scheduler/docs')), page.click('text=Refresh')]);
  }
  await snap('replication-completed');
  const from = await req('GET', `${U}/${DB}/_all_docs`), to = await req('GET', `${U}/${COPY}/_all_docs`);
  eq(to.json.rows, from.json.rows);
  eq(to.json.rows.length, 4);
  const rep = await req('GET', `${U}/_replicator/_all_docs?include_docs=true`);
  eq(rep.json.rows.length, 1);
  eq(rep.json.rows[0].doc._replication_state, 'completed');
  eq(rep.json.rows[0].doc.target.url, `http://127.0.0.1:${srv.port}/${COPY}`);
  eq((await req('GET', `${U}/${COPY}/soup`)).json.reason, 'deleted'); // the tombstone went along
  await clearToasts();
});

step('09 run a Mango query, through an index made in Fauxton', async () => {
  await page.goto(`${B}/_utils/#database/${DB}/_index`);
  await page.waitForSelector('#query-field .ace_content');
  await typeInAce('#query-field', JSON.stringify({ index: { fields: ['kind'] }, name: 'by-kind', type: 'json' }, null, 2));
  await page.click('button:has-text("Create index")');
  await page.waitForSelector('text=Index is ready for querying.');
  const idx = await req('GET', `${U}/${DB}/_index`);
  eq(idx.json.indexes.map((i) => i.name), ['_all_docs', 'by-kind']);
  await clearToasts();
  await page.goto(`${B}/_utils/#database/${DB}/_find`);
  await page.waitForSelector('#query-field .ace_content');
  const q = { selector: { kind: 'bake' }, fields: ['_id', 'minutes'], sort: [{ kind: 'asc' }] };
  await typeInAce('#query-field', JSON.stringify(q, null, 2));
  await page.click('button:has-text("Run Query")');
  await page.waitForSelector('text=Showing document 1 - 2.');
  await page.click('button:has-text("Table")'); // the layout a page last used stays: choose it
  await page.waitForSelector('td[title="bread"]');
  await page.waitForSelector('td[title="pie"]');
  await snap('mango-query');
  const shown = await page.$$eval('#dashboard-lower-content table tbody tr', (trs) =>
    trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent.trim()).filter(Boolean)));
  const r = await req('POST', `${U}/${DB}/_find`, q);
  eq(r.status, 200);
  eq(r.json.docs.map((d) => d._id), ['bread', 'pie']);
  eq(shown, r.json.docs.map((d) => [d._id, String(d.minutes)]));
  const ex = await req('POST', `${U}/${DB}/_explain`, q);
  eq(ex.json.index.name, 'by-kind');
});

step('10 make a view in Fauxton and see its rows', async () => {
  await page.goto(`${B}/_utils/#database/${DB}/new_view`);
  await page.waitForSelector('#map-function .ace_content');
  await page.selectOption('#faux__edit-view__design-doc', 'new-doc');
  await page.fill('#new-ddoc', 'recipes');
  await page.fill('#index-name', 'by-minutes');
  await typeInAce('#map-function', 'function (doc) {\n  if (doc.minutes) emit(doc.minutes, doc.kind);\n}');
  await snap('new-view');
  await page.click('#save-view');
  await page.waitForSelector('text=View Saved.');
  await page.waitForSelector('text=Showing document 1 - 4.');
  await page.click('button:has-text("Metadata")');
  await page.waitForSelector('td[title="salad"]');
  await snap('view-rows');
  const r = await req('GET', `${U}/${DB}/_design/recipes/_view/by-minutes`);
  eq(r.status, 200);
  eq(r.json.rows.map((x) => x.id), ['salad', 'pie', 'bread', 'stew']);
  const rows = await tableRows();
  eq(rows, r.json.rows.map((x) => [x.id, String(x.key), String(x.value)]));
  const dd = await req('GET', `${U}/${DB}/_design/recipes`);
  ok(/emit\(doc\.minutes, doc\.kind\)/.test(dd.json.views['by-minutes'].map), dd.text);
});

test('nothing failed on the wire or in the page', async () => {
  eq(bad, []);
});

test('stop', async () => {
  if (ctx) await ctx.close();
  if (profile) fs.rmSync(profile, { recursive: true, force: true });
  await srv.stop();
  fs.rmSync(srv.dataDir, { recursive: true, force: true });
});

run();
