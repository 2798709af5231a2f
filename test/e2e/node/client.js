#!/usr/bin/env node
// The grpc-js xDS client of Facet's end-to-end tests; same flags and output as
// e2e_cpp_client. Calls /facet.test.Echo/Whoami or the --method list (empty
// request, waitForReady) on --target, usually xds:///greeter or
// xds://a.example/greeter resolved with the bootstrap named by
// GRPC_XDS_BOOTSTRAP, and prints which backend answered.
//
//   node client.js --target xds:///greeter --count 3
//       prints one backend id per line; failures go to stderr, exit code 1.
//   node client.js --target xds:///greeter --duration-ms 8000 --interval-ms 20
//       prints "ok <id>" or "fail <CODE>: <message>" per call, then
//       "summary ok=N fail=M"; exit code 1 if any call failed.
//   node client.js --method /a.B/C,/a.B/D --metadata 'x-a=1,x-b=2;;x-a=3' --count 2 --outcomes=true
//       each round calls, for every metadata set (';' separates sets, ','
//       pairs; here {x-a:1, x-b:2}, none, {x-a:3}), every method;
//       --outcomes prints every call, in that order, as "ok <id>" or
//       "fail <CODE>: <message>" and exits 0 once all calls are made.
'use strict';

const grpc = require('@grpc/grpc-js');
require('@grpc/grpc-js-xds').register();

const DEFAULTS = {
  'target': 'xds:///greeter',
  'method': '/facet.test.Echo/Whoami',
  'count': '1',
  'duration-ms': '0',
  'interval-ms': '20',
  'rpc-timeout-ms': '20000',
  'metadata': '',
  'outcomes': 'false',
};

function parseFlags(argv) {
  const flags = {...DEFAULTS};
  for (let i = 0; i < argv.length; i++) {
    const match = /^--([a-z-]+)(?:=(.*))?$/.exec(argv[i]);
    if (!match || !(match[1] in DEFAULTS)) {
      throw new Error(`unknown argument "${argv[i]}"; flags: --${Object.keys(DEFAULTS).join(' --')}`);
    }
    if (match[2] !== undefined) {
      flags[match[1]] = match[2];
    } else if (i + 1 < argv.length) {
      flags[match[1]] = argv[++i];
    } else {
      throw new Error(`flag --${match[1]} needs a value`);
    }
  }
  for (const name of ['count', 'duration-ms', 'interval-ms', 'rpc-timeout-ms']) {
    const value = Number(flags[name]);
    if (!Number.isInteger(value) || value < 0) {
      throw new Error(`--${name} must be a non-negative integer, got "${flags[name]}"`);
    }
    flags[name] = value;
  }
  if (flags['outcomes'] !== 'true' && flags['outcomes'] !== 'false') {
    throw new Error(`--outcomes must be true or false, got "${flags['outcomes']}"`);
  }
  flags['outcomes'] = flags['outcomes'] === 'true';
  flags['method'] = flags['method'].split(',');
  flags['metadata'] = flags['metadata'].split(';').map((set) => set.split(',')
    .filter((pair) => pair !== '')
    .map((pair) => {
      const equals = pair.indexOf('=');
      const key = equals < 0 ? '' : pair.slice(0, equals);
      if (key === '' || key !== key.toLowerCase()) {
        throw new Error(`--metadata wants lower-case key=value pairs, got "${pair}"`);
      }
      return [key, pair.slice(equals + 1)];
    }));
  return flags;
}

const identity = (buffer) => buffer;

function makeClient(target) {
  return new grpc.Client(target, grpc.credentials.createInsecure());
}

// Calls `method` with `pairs` as metadata. Resolves to {id} or
// {error: "CODE: message"}.
function call(client, method, pairs, timeoutMs) {
  return new Promise((resolve) => {
    const metadata = new grpc.Metadata({waitForReady: true});
    for (const [key, value] of pairs) metadata.add(key, value);
    client.makeUnaryRequest(method, identity, identity, Buffer.alloc(0), metadata,
                            {deadline: Date.now() + timeoutMs}, (err, response) => {
      if (err) {
        const code = grpc.status[err.code] || `CODE_${err.code}`;
        resolve({error: `${code}: ${String(err.details || err.message).replace(/\n/g, ' ')}`});
      } else {
        resolve({id: response.toString('utf8')});
      }
    });
  });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

// Makes one round of calls: for every metadata set, every method. Resolves to
// the results in call order.
async function round(client, flags) {
  const results = [];
  for (const pairs of flags['metadata']) {
    for (const method of flags['method']) {
      results.push(await call(client, method, pairs, flags['rpc-timeout-ms']));
    }
  }
  return results;
}

const outcomeLine = (result) =>
  result.error === undefined ? `ok ${result.id}` : `fail ${result.error}`;

async function runCount(client, flags) {
  let failures = 0;
  for (let i = 0; i < flags['count']; i++) {
    for (const result of await round(client, flags)) {
      if (flags['outcomes']) {
        process.stdout.write(`${outcomeLine(result)}\n`);
      } else if (result.error === undefined) {
        process.stdout.write(`${result.id}\n`);
      } else {
        process.stderr.write(`call ${i + 1} failed: ${result.error}\n`);
        failures++;
      }
    }
  }
  return failures === 0 ? 0 : 1;
}

async function runContinuous(client, flags) {
  const interval = flags['interval-ms'];
  const end = Date.now() + flags['duration-ms'];
  let ok = 0;
  let failed = 0;
  for (let next = Date.now(); next < end; next += interval) {
    await sleep(next - Date.now());
    for (const result of await round(client, flags)) {
      if (result.error === undefined) {
        ok++;
      } else {
        failed++;
      }
      process.stdout.write(`${outcomeLine(result)}\n`);
    }
    // After a slow call, carry on from now instead of bursting to catch up.
    if (Date.now() > next + interval) next = Date.now() - interval;
  }
  process.stdout.write(`summary ok=${ok} fail=${failed}\n`);
  return failed === 0 ? 0 : 1;
}

async function main() {
  let flags;
  try {
    flags = parseFlags(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`client.js: ${e.message}\n`);
    return 2;
  }
  const client = makeClient(flags['target']);
  try {
    return flags['duration-ms'] > 0 ? await runContinuous(client, flags)
                                     : await runCount(client, flags);
  } finally {
    client.close();
  }
}

// The xDS client keeps timers alive; exit explicitly once stdout is flushed.
main().then((code) => {
  process.stdout.write('', () => process.exit(code));
});
