// att1g.js — the 1 GiB attachment proof: divan streams a 1 GiB attachment
// in and out in bounded memory (`make bench-att1g`; `make bench` runs it
// after attbench.js).
//
// Starts `divan serve` (DIVAN_BIN or ./divan, server admin, Basic auth) on a
// free loopback port with a temp data directory, then:
//
//   upload    PUT /att1g/big/blob.bin, application/octet-stream, with
//             Content-Length (ATT1G_CHUNKED=1: chunked instead): the bytes
//             are an AES-128-CTR keystream made chunk by chunk as the
//             socket drains, MD5 computed while sending — never held whole
//   check     the doc's stub: length and digest (md5-<base64>)
//   download  GET /att1g/big/blob.bin, hashed as it arrives
//
// The server's VmRSS (/proc/PID/status) is sampled every 100 ms during both;
// prints MB/s (10^6 bytes) and peak RSS of each. Exit status 1 when the
// digests or lengths differ, a request fails, or the peak RSS reaches
// ATT1G_MAX_RSS_MIB (128). The server is stopped by PID, the dir removed.
//
//   node bench/http/att1g.js
//   DIVAN_BIN=build/cc/divan ATT1G_BYTES=$((256<<20)) node bench/http/att1g.js
//   ATT1G_URL=http://127.0.0.1:5984 ATT1G_PID=1234   an already running server
//                                     (URL credentials become Basic auth)
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const { log, fmt, makeTmp, basicAuth, stopProc, startDivan, died, client, rssKiB, sampler, table } = require('./lib');

const TOTAL = Number(process.env.ATT1G_BYTES || 2 ** 30);
const MAX_RSS_MIB = Number(process.env.ATT1G_MAX_RSS_MIB || 128);
const CHUNKED = process.env.ATT1G_CHUNKED === '1';
const CHUNK = 1 << 20; // bytes made and written per step
const TMP = makeTmp('divan-att1g-');

// A connection per request; answers kept as text, the download's only when
// it is short (an error).
const web = client();

// Stream TOTAL pseudo-random bytes as the body of a PUT; resolves with the
// answer and the MD5 of what was sent.
function upload(s, p) {
  return new Promise((resolve, reject) => {
    const u = new URL(s.url + p);
    const headers = { 'Content-Type': 'application/octet-stream' };
    if (u.username) headers.Authorization = basicAuth(u);
    if (!CHUNKED) headers['Content-Length'] = TOTAL;
    const cipher = crypto.createCipheriv('aes-128-ctr', crypto.randomBytes(16), crypto.randomBytes(16));
    const zeros = Buffer.alloc(CHUNK);
    const h = crypto.createHash('md5');
    let sent = 0, answered = false;
    const r = http.request({ method: 'PUT', hostname: u.hostname, port: u.port, path: u.pathname, headers, agent: false }, (res) => {
      answered = true;
      const c = [];
      res.on('data', (d) => c.push(d));
      res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(c).toString('utf8'), sent, md5: h.digest('hex') }));
      res.on('error', reject);
    });
    r.on('error', (e) => reject(new Error(`PUT ${p} after ${sent} bytes: ${e.message}`)));
    // Write while the socket takes it; wait for 'drain' when it does not.
    function pump() {
      while (sent < TOTAL && !answered) {
        const n = Math.min(CHUNK, TOTAL - sent);
        const chunk = cipher.update(n === CHUNK ? zeros : zeros.subarray(0, n));
        h.update(chunk);
        sent += n;
        if (!r.write(chunk)) { r.once('drain', pump); return; }
      }
      if (sent >= TOTAL) r.end();
      // an early answer (an error status) ends the upload: its handler resolves
    }
    pump();
  });
}

async function main() {
  let srv = null;
  let failed = [];
  try {
    if (process.env.ATT1G_URL) {
      // its origin, with the URL's credentials if any
      const u = new URL(process.env.ATT1G_URL);
      const creds = u.username ? `${u.username}:${u.password}@` : '';
      srv = { url: `${u.protocol}//${creds}${u.host}`, base: u.origin, pid: Number(process.env.ATT1G_PID || 0), proc: null, stderr: () => '' };
      await web.request(srv.url, 'DELETE', '/att1g');
    } else {
      srv = await startDivan(TMP);
    }
    log(`att1g: ${srv.proc ? "divan" : "server"} ${srv.base} (pid ${srv.pid}), ${fmt(TOTAL)} bytes (${fmt(TOTAL / 2 ** 20)} MiB)` +
        `${CHUNKED ? ', chunked' : ', Content-Length'}; RSS limit ${MAX_RSS_MIB} MiB; idle rss ${fmt(rssKiB(srv.pid) / 1024, 1)} MiB`);
    const c = await web.request(srv.url, 'PUT', '/att1g');
    if (c.status !== 201) throw new Error(`PUT /att1g: ${c.status} ${c.text}`);

    let stop = sampler(srv.pid);
    let t0 = process.hrtime.bigint();
    const up = await upload(srv, '/att1g/big/blob.bin');
    const upSecs = Number(process.hrtime.bigint() - t0) / 1e9;
    const upRss = stop().rssMiB;
    log(`upload:   ${up.status} ${up.text.trim().slice(0, 200)}`);
    log(`upload:   ${fmt(up.sent)} bytes in ${fmt(upSecs, 2)} s = ${fmt(up.sent / 1e6 / upSecs, 1)} MB/s, peak server rss ${fmt(upRss, 1)} MiB, md5 ${up.md5}`);
    if (up.status !== 201) throw new Error(`PUT /att1g/big/blob.bin: ${up.status} ${up.text} (after ${up.sent} of ${TOTAL} bytes)`);
    if (upRss >= MAX_RSS_MIB) failed.push(`upload peak RSS ${fmt(upRss, 1)} MiB ≥ ${MAX_RSS_MIB} MiB`);

    const d = await web.request(srv.url, 'GET', '/att1g/big');
    const stub = d.status === 200 ? (JSON.parse(d.text)._attachments || {})['blob.bin'] : null;
    const want = 'md5-' + Buffer.from(up.md5, 'hex').toString('base64');
    log(`stub:     ${d.status} ${JSON.stringify(stub)}`);
    if (!stub || stub.length !== TOTAL || stub.digest !== want) failed.push(`GET /att1g/big: ${d.status} stub ${JSON.stringify(stub)}, want length ${TOTAL} digest ${want}`);

    stop = sampler(srv.pid);
    t0 = process.hrtime.bigint();
    const down = await web.request(srv.url, 'GET', '/att1g/big/blob.bin', undefined, { md5: true, keep: 4096 });
    const downSecs = Number(process.hrtime.bigint() - t0) / 1e9;
    const downRss = stop().rssMiB;
    log(`download: ${down.status} ${fmt(down.bytes)} bytes in ${fmt(downSecs, 2)} s = ${fmt(down.bytes / 1e6 / downSecs, 1)} MB/s, ` +
        `peak server rss ${fmt(downRss, 1)} MiB, md5 ${down.md5}`);
    if (down.status !== 200) failed.push(`GET /att1g/big/blob.bin: ${down.status} ${down.text === null ? `(${down.bytes} bytes)` : down.text.slice(0, 300)}`);
    else if (down.bytes !== TOTAL || down.md5 !== up.md5) failed.push(`download differs: ${down.bytes} bytes md5 ${down.md5}, sent ${TOTAL} md5 ${up.md5}`);
    if (downRss >= MAX_RSS_MIB) failed.push(`download peak RSS ${fmt(downRss, 1)} MiB ≥ ${MAX_RSS_MIB} MiB`);

    log('');
    table(['1 GiB attachment', 'MB/s', 'peak server RSS'], 'lrr', [
      [`upload (PUT, ${CHUNKED ? 'chunked' : 'Content-Length'})`, fmt(up.sent / 1e6 / upSecs, 1), `${fmt(upRss, 1)} MiB`],
      ['download (GET)', fmt(down.bytes / 1e6 / downSecs, 1), `${fmt(downRss, 1)} MiB`],
    ]);
    if (died(srv)) failed.push('divan died: ' + srv.stderr().slice(-2000));
  } catch (e) {
    failed.push(String(e && e.stack || e));
  } finally {
    if (srv && srv.proc) {
      const code = await stopProc(srv.proc);
      if (code !== 0) failed.push(`divan exited with ${code} on SIGTERM: ${srv.stderr().slice(-2000)}`);
    }
    fs.rmSync(TMP, { recursive: true, force: true });
  }
  if (failed.length) {
    log('att1g: FAILED\n  ' + failed.join('\n  '));
    process.exit(1);
  }
  log(`att1g: ok — md5 equal, peak RSS below ${MAX_RSS_MIB} MiB`);
}

main();
