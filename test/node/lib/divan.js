// divan.js — start a real `divan serve` for a test, on a free loopback port,
// with its own data directory; stop it by PID.
//
//   const { startDivan } = require('../lib/divan');
//   const srv = await startDivan();          // { url, port, pid, dataDir, proc }
//   ... fetch(srv.url + '/db') ...
//   await srv.stop();                        // SIGTERM, then SIGKILL after 5 s; throws unless it exited 0
//   await srv.kill9();                       // SIGKILL (crash tests)
//   const again = await startDivan({ dataDir: srv.dataDir }); // restart on the same data
//
// The binary is $DIVAN_BIN or ./divan (run `make` first). The server prints
// "divan: listening on http://HOST:PORT/" on stdout once it accepts.
//
// Every server runs with a server admin (DIVAN_ADMIN, opts.admin, default
// admin:testpass, or none with admin: null): srv.url carries its
// credentials (http://admin:testpass@127.0.0.1:PORT), which t.js's req(),
// nano and PouchDB all turn into Basic auth; srv.base is the same URL
// without them, for anonymous requests. opts.env adds environment
// variables; opts.config writes DATA/local.ini before the start.
//
// With DIVAN_FDB=/path/to/libfdb_c.so (the test double, test/fdbsim) every
// server runs on the fdb backend instead: `--fdb DATA/fdb.cluster
// --fdb-library $DIVAN_FDB`, the cluster file naming DATA/fdb as the
// double's data directory, so a restart on the same DATA sees the same
// "cluster".
//
// runFile() is the whole life of a client test file (t.js tests):
//
//   runFile(__filename, { seconds: 85,            // the file's budget
//     divan: { config: '[x]\ny = 1\n' },          // startDivan's options (optional)
//     started: ({ srv, base }) => { ... },        // srv null with DIVAN_URL
//     finished: async () => { ... } });           // before the server stops
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { run } = require('./t');

const ROOT = path.resolve(__dirname, '..', '..', '..');

function startDivan(opts = {}) {
  const bin = process.env.DIVAN_BIN ? path.resolve(process.env.DIVAN_BIN) : path.join(ROOT, 'divan');
  const dataDir = opts.dataDir || fs.mkdtempSync(path.join(process.env.TEST_TMPDIR || os.tmpdir(), 'divan-'));
  const args = ['serve', '--data', dataDir, '--bind', '127.0.0.1', '--port', '0', ...(opts.args || [])];
  if (process.env.DIVAN_FDB) {
    const cluster = path.join(dataDir, 'fdb.cluster');
    if (!fs.existsSync(cluster)) fs.writeFileSync(cluster, `divan:test@${path.join(dataDir, 'fdb')}\n`);
    args.push('--fdb', cluster, '--fdb-library', path.resolve(process.env.DIVAN_FDB));
  }
  const admin = opts.admin === undefined ? { name: 'admin', password: 'testpass' } : opts.admin;
  const env = Object.assign({}, process.env, opts.env || {});
  delete env.DIVAN_ADMIN;
  if (admin) env.DIVAN_ADMIN = `${admin.name}:${admin.password}`;
  if (opts.config !== undefined) fs.writeFileSync(path.join(dataDir, 'local.ini'), opts.config);
  const proc = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
  let log = '';
  proc.stderr.on('data', (d) => { log += d; if (process.env.DIVAN_LOG) process.stderr.write(d); });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => { proc.kill('SIGKILL'); reject(new Error('divan did not start: ' + out + log)); }, /address/.test(process.env.DV_BUILD || '') ? 30000 : 15000); // a sanitized build takes 11-13 s to start on a loaded 2-core machine
    proc.on('exit', (code, sig) => { clearTimeout(timer); reject(new Error(`divan exited (${code ?? sig}): ${out}${log}`)); });
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/[^\s/]+:(\d+))\//.exec(out);
      if (!m) return;
      clearTimeout(timer);
      proc.removeAllListeners('exit');
      let halting = false;
      const exited = new Promise((res) => proc.on('exit', (code, sig) => {
        // a crash nobody asked for shows at once, next to the check that met
        // it, with the stack divan's fatal-signal handler wrote
        if (!halting && /SIGSEGV|SIGBUS|SIGILL|SIGFPE|SIGABRT/.test(String(sig)))
          console.log(`divan (pid ${proc.pid}) died of ${sig}; its log ends:\n${log.slice(-4000)}`);
        res(code ?? sig);
      }));
      const halt = (sig) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return exited;
        halting = true;
        proc.kill(sig);
        // a sanitized build's exit (LeakSanitizer's scan of a large heap) takes longer; a loaded
        // two-core machine can take seconds to close RocksDB
        const t = setTimeout(() => proc.kill('SIGKILL'), /address/.test(process.env.DV_BUILD || '') ? 30000 : 15000);
        return exited.finally(() => clearTimeout(t));
      };
      const base = m[1];
      const url = admin ? base.replace('http://', `http://${encodeURIComponent(admin.name)}:${encodeURIComponent(admin.password)}@`) : base;
      resolve({
        url, base, admin, port: Number(m[2]), pid: proc.pid, dataDir, proc,
        stdout: () => out,
        log: () => log,
        // The log is written by its own thread, on stderr, a pipe apart
        // from the "listening" line on stdout: a line logged before that
        // one can still arrive after it. True once the log matches re,
        // false after `ms`.
        logSays: async (re, ms = 3000) => {
          for (const end = Date.now() + ms; !re.test(log) && Date.now() < end;) await new Promise((r) => setTimeout(r, 20));
          return re.test(log);
        },
        // A clean stop exits 0; anything else (a sanitizer report at exit,
        // a crash) fails the caller with the server's stderr.
        stop: () => halt('SIGTERM').then((code) => {
          if (code !== 0) throw new Error(`divan exited with ${code} on SIGTERM:\n${log.slice(-4000)}`);
          return code;
        }),
        kill9: () => halt('SIGKILL'),
        signal: (sig) => halt(sig), // resolves to the exit code or signal name
      });
    });
  });
}

// Run a test file's tests against a divan of its own, or the one at
// DIVAN_URL (base: its URL, credentials and all, without a trailing slash).
// Never leave the server behind: past `seconds`, on an uncaught exception or
// an unhandled rejection the file fails at once and its server is killed
// (SIGKILL by PID). A server that does not exit 0 on SIGTERM (a sanitizer
// report, a crash) fails the file too. Ends the process.
function runFile(filename, { seconds, started = () => {}, finished = async () => {}, divan = {} }) {
  const name = path.basename(filename);
  let srv = null;
  const bail = (why) => {
    console.log(`FAIL ${name}: ${why}`);
    if (srv) srv.proc.kill('SIGKILL');
    process.exit(1);
  };
  setTimeout(() => bail(`still running after ${seconds} s`), seconds * 1000).unref();
  process.on('uncaughtException', (e) => bail(String(e && e.stack || e)));
  process.on('unhandledRejection', (e) => bail(String(e && e.stack || e)));
  (async () => {
    const t0 = Date.now();
    let base;
    if (process.env.DIVAN_URL) base = process.env.DIVAN_URL.replace(/\/$/, '');
    else { srv = await startDivan(divan); base = srv.url; } // divan: startDivan's options (config, env, …)
    await started({ srv, base });
    try {
      await run();
    } finally {
      await finished();
      if (srv) {
        await srv.stop().catch((e) => { console.log(`FAIL ${name}: ${e.message}`); process.exitCode = 1; });
        fs.rmSync(srv.dataDir, { recursive: true, force: true });
      }
    }
    if (process.env.T_VERBOSE) console.log(`${name}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    process.exit(process.exitCode || 0);
  })();
}

module.exports = { startDivan, runFile, ROOT };
