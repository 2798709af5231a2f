// Loads a console page in headless Firefox over WebDriver BiDi (Firefox's
// remote protocol; Node's WebSocket, --experimental-websocket on Node 20),
// waits until a JavaScript condition on the page's DOM holds (the page's
// scripts ran and drew what they read), and saves a screenshot.
//
// Usage: node --experimental-websocket firefox_page.js FIREFOX PROFILE_DIR URL CONDITION SCREENSHOT
// Prints "firefox: URL: N ms"; exits 1 when the condition did not hold in
// 15 s (the screenshot is saved either way).
'use strict';

const {spawn} = require('child_process');
const fs = require('fs');

const [firefox, profile, url, condition, screenshot] = process.argv.slice(2);
const kBudgetMs = 15000;

fs.mkdirSync(profile, {recursive: true});
const browser = spawn(firefox, ['--headless', '--no-remote', '--profile', profile,
                                '--remote-debugging-port=0', 'about:blank'],
                      {stdio: ['ignore', 'ignore', 'pipe'], env: {...process.env, MOZ_HEADLESS: '1'}});
let log = '';

// The WebSocket address Firefox prints once its remote agent listens.
const address = new Promise((resolve, reject) => {
  browser.stderr.on('data', (chunk) => {
    log += chunk;
    const match = /WebDriver BiDi listening on (ws:\/\/[^\s]+)/.exec(log);
    if (match) resolve(match[1]);
  });
  browser.on('exit', (code) => reject(new Error(`firefox exited (${code}): ${log.slice(-500)}`)));
  setTimeout(() => reject(new Error(`firefox did not listen in 30 s: ${log.slice(-500)}`)), 30000);
});

let socket = null;
let nextId = 1;
const pending = new Map();
function send(method, params = {}) {
  const id = nextId++;
  socket.send(JSON.stringify({id, method, params}));
  return new Promise((resolve, reject) => pending.set(id, {resolve, reject}));
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  const base = await address;
  socket = new WebSocket(`${base}/session`);
  await new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = () => reject(new Error(`cannot connect to ${base}/session`));
  });
  socket.onmessage = (event) => {
    const message = JSON.parse(event.data);
    const waiter = pending.get(message.id);
    if (!waiter) return;
    pending.delete(message.id);
    if (message.type === 'error') waiter.reject(new Error(`${message.error}: ${message.message}`));
    else waiter.resolve(message.result);
  };
  await send('session.new', {capabilities: {}});
  const {contexts} = await send('browsingContext.getTree', {});
  const context = contexts[0].context;
  await send('browsingContext.setViewport', {context, viewport: {width: 1280, height: 1500}});
  const started = Date.now();
  await send('browsingContext.navigate', {context, url, wait: 'complete'});
  let held = false;
  while (Date.now() - started < kBudgetMs) {
    const answer = await send('script.evaluate', {
      expression: `Boolean(${condition})`, target: {context}, awaitPromise: false,
    });
    if (answer.type === 'success' && answer.result.value === true) {
      held = true;
      break;
    }
    await sleep(100);
  }
  const elapsed = Date.now() - started;
  const shot = await send('browsingContext.captureScreenshot', {context});
  fs.writeFileSync(screenshot, Buffer.from(shot.data, 'base64'));
  if (!held) throw new Error(`${url}: the page never showed ${condition} in ${kBudgetMs} ms`);
  console.log(`firefox: ${url}: ${elapsed} ms`);
  await send('session.end', {}).catch(() => {});
}

main().then(() => 0, (error) => {
  console.log(`FAIL: ${error.message}`);
  return 1;
}).then((code) => {
  browser.kill('SIGTERM');
  process.exit(code);
});
