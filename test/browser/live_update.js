// Drives headless Chromium over the DevTools protocol on a pipe
// (--remote-debugging-pipe: NUL-terminated JSON on fds 3 and 4, so no
// WebSocket library is needed): opens the console's overview, waits for an
// object's row to show it accepted, writes a rejected revision of its file,
// and measures how long the open page takes to show the previous revision
// serving and the rejection with its reason in its timeline (no reload).
// Saves a screenshot.
//
// Usage: node live_update.js BROWSER URL OBJECT FILE REJECTED_CONTENT_FILE REASON SCREENSHOT
// Prints "live update: N ms"; exits 1 when the page did not show it in 2 s.
'use strict';

const {spawn} = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const [browser, url, object, file, rejectedFile, reason, screenshot] = process.argv.slice(2);
const kBudgetMs = 2000;

const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'facet-console-'));
const chrome = spawn(browser, ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
                               '--remote-debugging-pipe', `--user-data-dir=${profile}`,
                               '--window-size=1280,1500', 'about:blank'],
                     {stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe']});
const toChrome = chrome.stdio[3];
const fromChrome = chrome.stdio[4];

let nextId = 1;
const pending = new Map();
let buffer = Buffer.alloc(0);
fromChrome.on('data', (chunk) => {
  buffer = Buffer.concat([buffer, chunk]);
  for (let end; (end = buffer.indexOf(0)) >= 0;) {
    const message = JSON.parse(buffer.subarray(0, end).toString('utf8'));
    buffer = buffer.subarray(end + 1);
    const waiter = pending.get(message.id);
    if (waiter) {
      pending.delete(message.id);
      if (message.error) waiter.reject(new Error(JSON.stringify(message.error)));
      else waiter.resolve(message.result);
    }
  }
});

function send(method, params = {}, sessionId) {
  const id = nextId++;
  toChrome.write(JSON.stringify({id, method, params, sessionId}) + '\0');
  return new Promise((resolve, reject) => pending.set(id, {resolve, reject}));
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  const {targetId} = await send('Target.createTarget', {url});
  const {sessionId} = await send('Target.attachToTarget', {targetId, flatten: true});
  const evaluate = async (expression) =>
      (await send('Runtime.evaluate', {expression, returnByValue: true}, sessionId)).result.value;
  const outcome = () => evaluate(
      `(document.querySelector('tr[data-object="${object}"]') || {dataset: {}}).dataset.outcome || ''`);
  // The timeline entry of the object's rejection, with the reason the server
  // gave (its /events), or ''.
  const rejection = () => evaluate(
      `([...document.querySelectorAll('#timeline li')].map((li) => li.textContent)
          .find((text) => text.includes(${JSON.stringify(object + ' rejected')})) || '')`);

  for (let start = Date.now(); (await outcome()) !== 'accepted'; await sleep(50)) {
    if (Date.now() - start > 10000) throw new Error(`${object} never showed accepted`);
  }
  fs.copyFileSync(rejectedFile, file);
  const changed = Date.now();
  let elapsed = -1;
  while (Date.now() - changed < 10000) {
    if ((await outcome()) === 'previous' && (await rejection()).includes(reason)) {
      elapsed = Date.now() - changed;
      break;
    }
    await sleep(50);
  }
  const shot = await send('Page.captureScreenshot', {format: 'png'}, sessionId);
  fs.writeFileSync(screenshot, Buffer.from(shot.data, 'base64'));
  if (elapsed < 0) {
    throw new Error(`the page did not show ${object} rejected for ${reason} within 10 s ` +
                    `(timeline entry: "${await rejection()}")`);
  }
  console.log(`live update: ${elapsed} ms`);
  if (elapsed > kBudgetMs) throw new Error(`the page took ${elapsed} ms, over ${kBudgetMs} ms`);
}

main().then(() => 0, (error) => {
  console.log(`FAIL: ${error.message}`);
  return 1;
}).then((code) => {
  chrome.kill('SIGTERM');
  fs.rmSync(profile, {recursive: true, force: true});
  process.exit(code);
});
