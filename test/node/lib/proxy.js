// proxy.js — a small fault-injecting HTTP proxy for the replication
// suites: it sits between a replicator and a peer, forwards every request
// (streamed both ways: continuous feeds, multipart bodies), records it, and
// on the requests a rule picks answers an error, cuts the connection
// mid-response, or delays.
//
//   const { startProxy } = require('../lib/proxy');
//   const p = await startProxy(peerPort);          // { port, url(base), log, ... }
//   p.rule((r) => r.path.includes('/_bulk_get') && p.count('bulk_get') <= 2 ? { status: 500 } : null);
//   ... replicate through `http://admin:pw@127.0.0.1:${p.port}/db` ...
//   p.log      → [{ method, path, status, action, ms }] of every request
//   p.faults   → how many faults were injected, by action
//   await p.close();
//
// A rule is called with { method, path, n } (n: how many requests with the
// same kind came before, plus one; kind = kindOf(path): changes, revs_diff,
// bulk_get, bulk_docs, local, doc, db, root, ensure_full_commit, …) and
// returns null (forward), or one of
//   { status: 500, body? }       answer that without asking the peer
//   { cut: bytes }               forward, but destroy the client connection
//                                once that many body bytes were sent
//   { reset: true }              destroy the client connection at once
//   { delayMs: n }               forward after n ms
// Hop-by-hop headers are not forwarded; Expect: 100-continue is answered
// by the proxy itself.
'use strict';
const http = require('http');

const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'expect', 'host']);

// What a request is, for rules and counts.
function kindOf(method, path) {
  const p = path.split('?')[0];
  const segs = p.split('/').filter(Boolean);
  if (segs.length === 0) return 'root';
  if (segs[0] === '_session') return 'session';
  if (segs.length === 1) return 'db';
  const s = segs[1];
  if (s === '_changes') return 'changes';
  if (s === '_revs_diff') return 'revs_diff';
  if (s === '_bulk_get') return 'bulk_get';
  if (s === '_bulk_docs') return 'bulk_docs';
  if (s === '_ensure_full_commit') return 'ensure_full_commit';
  if (s === '_local') return 'local';
  if (s === '_all_docs') return 'all_docs';
  if (s === '_design' && segs.length >= 3) return 'ddoc';
  if (/[?&]open_revs=/.test(path)) return 'open_revs';
  return segs.length > 2 ? 'attachment' : 'doc';
}

function startProxy(peerPort, { host = '127.0.0.1' } = {}) {
  let upstream = peerPort;
  let rule = () => null;
  const counts = {};
  const log = [];
  const faults = {};
  const sockets = new Set();
  const fault = (what) => { faults[what] = (faults[what] || 0) + 1; };

  const server = http.createServer((req, res) => {
    const kind = kindOf(req.method, req.url);
    counts[kind] = (counts[kind] || 0) + 1;
    const entry = { method: req.method, path: req.url, kind, n: counts[kind], status: 0, action: 'forward', t: Date.now() };
    log.push(entry);
    let action = null;
    try { action = rule({ method: req.method, path: req.url, kind, n: counts[kind], headers: req.headers }); } catch (e) { action = null; }
    if (action && action.reset) {
      entry.action = 'reset';
      fault('reset');
      req.socket.destroy();
      return;
    }
    if (action && action.status) {
      entry.action = 'status';
      entry.status = action.status;
      fault('status');
      req.resume();
      const body = action.body || JSON.stringify({ error: 'proxy_fault', reason: 'injected by the test proxy' });
      res.writeHead(action.status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    const go = () => {
      const headers = {};
      for (let i = 0; i < req.rawHeaders.length; i += 2) {
        const k = req.rawHeaders[i];
        if (HOP.has(k.toLowerCase())) continue;
        if (headers[k] !== undefined) headers[k] = [].concat(headers[k], req.rawHeaders[i + 1]);
        else headers[k] = req.rawHeaders[i + 1];
      }
      headers.Host = `${host}:${upstream}`;
      const up = http.request({ host, port: upstream, method: req.method, path: req.url, headers, agent: false }, (ures) => {
        entry.status = ures.statusCode;
        const h = {};
        for (let i = 0; i < ures.rawHeaders.length; i += 2) {
          const k = ures.rawHeaders[i];
          if (HOP.has(k.toLowerCase())) continue;
          if (h[k] !== undefined) h[k] = [].concat(h[k], ures.rawHeaders[i + 1]);
          else h[k] = ures.rawHeaders[i + 1];
        }
        res.writeHead(ures.statusCode, h);
        if (typeof res.flushHeaders === 'function') res.flushHeaders();
        let sent = 0;
        const cutAt = action && action.cut !== undefined ? action.cut : -1;
        let gone = false;
        ures.on('data', (chunk) => {
          if (gone) return;
          if (cutAt >= 0) {
            if (sent + chunk.length >= cutAt) {
              const part = chunk.slice(0, Math.max(0, cutAt - sent));
              if (part.length) res.write(part);
              sent += part.length;
              entry.action = 'cut';
              entry.cutAfter = sent;
              fault('cut');
              gone = true;
              ures.destroy();
              // let the partial bytes leave, then drop the connection
              setImmediate(() => req.socket.destroy());
              return;
            }
          }
          sent += chunk.length;
          res.write(chunk);
        });
        ures.on('end', () => { entry.ms = Date.now() - entry.t; if (!gone) res.end(); });
        ures.on('error', () => req.socket.destroy());
      });
      up.on('error', (e) => {
        entry.status = 502;
        entry.error = e.code || e.message;
        if (!res.headersSent) {
          const body = JSON.stringify({ error: 'bad_gateway', reason: String(e.code || e.message) });
          res.writeHead(502, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
          res.end(body);
        } else req.socket.destroy();
      });
      req.pipe(up);
      // the client went away: stop the upstream request too (continuous feeds)
      res.on('close', () => { if (!res.writableFinished) up.destroy(); });
    };
    if (action && action.delayMs) { entry.action = 'delay'; setTimeout(go, action.delayMs); } else go();
  });
  server.keepAliveTimeout = 30000;
  server.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
  server.on('clientError', (e, s) => s.destroy());

  return new Promise((resolve, reject) => {
    server.on('error', reject);
    server.listen(0, host, () => {
      const port = server.address().port;
      const p = {
        port,
        log,
        faults,
        counts,
        // the proxy's base URL with these credentials (none: without)
        url: (name, pw) => (name ? `http://${encodeURIComponent(name)}:${encodeURIComponent(pw)}@${host}:${port}` : `http://${host}:${port}`),
        rule(fn) { rule = fn || (() => null); },
        count: (kind) => counts[kind] || 0,
        setUpstream(portNo) { upstream = portNo; },
        // drop every open client connection (a network blip)
        dropAll() { for (const s of sockets) s.destroy(); },
        // "METHOD path" of every request so far (of one kind)
        requests: (kind) => log.filter((e) => !kind || e.kind === kind).map((e) => `${e.method} ${e.path}`),
        reset() { log.length = 0; for (const k of Object.keys(counts)) delete counts[k]; for (const k of Object.keys(faults)) delete faults[k]; rule = () => null; },
        close() {
          for (const s of sockets) s.destroy();
          return new Promise((res) => server.close(() => res()));
        },
      };
      resolve(p);
    });
  });
}

module.exports = { startProxy, kindOf };
