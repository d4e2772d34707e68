// js_prelude.js — CouchDB's JavaScript environment and query server
// protocol, evaluated once in every embedded context (js.h, js_sm.cc).
//
// The C side calls dv_handle(line) with one protocol command (a JSON
// array) and sends back the line it returns. The natives it may use:
// dv_log(text), dv_compile(source, name) (the function a source string
// evaluates to), dv_exchange(line) (post a line, get the caller's next one:
// list functions' getRow). Commands:
//   ["reset", config?]            → true          (views, issue 20)
//   ["add_fun", source]           → true
//   ["add_lib", lib]              → true
//   ["map_doc", doc]              → [[[key, value], …] per function]
//   ["reduce", [src…], [[k, v]…]] → [true, [result per src]]
//   ["rereduce", [src…], [v…]]    → [true, [result per src]]
//   ["ddoc", "new", id, ddoc]     → true
//   ["ddoc", "drop", id]          → true          (divan's own: a context forgets a ddoc)
//   ["ddoc", id, path, args]      → per path[0]: validate_doc_update → 1 |
//      {"forbidden"|"unauthorized": msg}; filters / views → [true, [bool…]];
//      updates → ["up", doc|null, resp]; shows → ["resp", resp];
//      lists → ["start", chunks, resp] … ["end", chunks]; rewrites → ["ok", req]
// Any failure answers ["error", name, reason].
//
// Everything a function can reach is in this one global: the standard
// classes and the names below. Design documents share the context, as they
// share a couchjs process in CouchDB; each keeps its compiled functions and
// modules in its own cache, replaced when "ddoc new" brings a new version.
(function (global) {
  var parse = JSON.parse, stringify = JSON.stringify, isArr = Array.isArray;
  var hasOwn = Object.prototype.hasOwnProperty;
  var nativeLog = global.dv_log, nativeCompile = global.dv_compile, nativeExchange = global.dv_exchange;

  var ddocs = Object.create(null); // id → {doc, funs: path → fn, modules: id → exports}
  var viewFuns = [], viewLib = null, queryConfig = {};

  function toSrc(v) {
    try { return stringify(v); } catch (e) { return String(v); }
  }

  // ---- errors ----------------------------------------------------------------------
  function Failure(name, reason) { this.name = name; this.reason = reason; }
  function fail(name, reason) { throw new Failure(name, reason); }

  // What a thrown value answers (CouchDB's handleError).
  function errorLine(e) {
    if (e instanceof Failure) return ["error", e.name, e.reason];
    if (isArr(e) && e[0] === "error" && e.length >= 3) return ["error", String(e[1]), String(e[2])];
    if (e && typeof e === "object" && e.error !== undefined && e.reason !== undefined)
      return ["error", String(e.error), typeof e.reason === "string" ? e.reason : toSrc(e.reason)];
    if (e instanceof Error) return ["error", e.name || "Error", String(e.message) + describeStack(e)];
    return ["error", "unnamed_error", toSrc(e)];
  }
  function describeStack(e) {
    var s = e && e.stack ? String(e.stack) : "";
    if (!s) return "";
    var first = s.split("\n")[0];
    return first ? " (" + first + ")" : "";
  }

  // ---- the environment ---------------------------------------------------------------
  var emitted = null;
  global.emit = function (key, value) {
    if (!emitted) fail("error", "emit() called outside a map function");
    emitted.push([key === undefined ? null : key, value === undefined ? null : value]);
  };
  global.log = function (message) {
    nativeLog(typeof message === "string" ? message : toSrc(message));
  };
  global.sum = function (values) {
    var s = 0;
    for (var i = 0; i < values.length; i++) s += values[i];
    return s;
  };
  global.toJSON = function (v) { return stringify(v); };
  global.isArray = function (v) { return isArr(v); };

  // ---- compiling ---------------------------------------------------------------------
  function compile(source, name) {
    if (source === "") fail("not_found", "missing function");
    if (typeof source !== "string")
      fail("compilation_error", "Expression does not eval to a function. (" + toSrc(source) + ")");
    var f;
    try {
      f = nativeCompile(source, name || "function");
    } catch (e) {
      fail("compilation_error", (e && e.name ? e.name + ": " + e.message : String(e)) + " (" + source + ")");
    }
    if (typeof f !== "function")
      fail("compilation_error", "Expression does not eval to a function. (" + source + ")");
    return f;
  }

  // CommonJS: require(path) from a design document's strings; paths are
  // "/"-separated members, relative ("./", "../") to the requiring module.
  function makeRequire(root, cache, parent) {
    return function require(name) {
      if (typeof name !== "string") fail("invalid_require_path", "require() needs a string, not " + toSrc(name));
      var parts = parent ? parent.current.split("/").filter(Boolean) : [];
      if (name[0] !== "." ) parts = [];
      var segs = name.split("/");
      for (var i = 0; i < segs.length; i++) {
        var s = segs[i];
        if (s === "" || s === ".") continue;
        if (s === "..") {
          if (!parts.length) fail("invalid_require_path", "Object has no parent " + toSrc(name));
          parts.pop();
        } else parts.push(s);
      }
      var id = parts.join("/");
      if (cache[id]) return cache[id].exports;
      var obj = root;
      for (var j = 0; j < parts.length; j++) {
        if (obj === null || typeof obj !== "object" || !hasOwn.call(obj, parts[j]))
          fail("invalid_require_path", 'Object has no property "' + parts[j] + '". ' + toSrc(obj));
        obj = obj[parts[j]];
      }
      if (typeof obj !== "string")
        fail("invalid_require_path", "Must require a JavaScript string, not: " + typeof obj + " (" + id + ")");
      var module = { id: id, current: parts.slice(0, -1).join("/"), parent: parent || null, exports: {} };
      cache[id] = module;
      var wrapper;
      try {
        wrapper = nativeCompile("function (module, exports, require) {\n" + obj + "\n}", id);
      } catch (e) {
        delete cache[id];
        fail("compilation_error", "Module require('" + name + "') raised error " + (e && e.name ? e.name + ": " + e.message : String(e)));
      }
      try {
        wrapper.call(module.exports, module, module.exports, makeRequire(root, cache, module));
      } catch (e) {
        delete cache[id];
        if (e instanceof Failure) throw e;
        fail("compilation_error", "Module require('" + name + "') raised error " +
             (e instanceof Error ? e.name + ": " + e.message : toSrc(e)));
      }
      return module.exports;
    };
  }

  // The require() the functions of the running design document see.
  var currentRequire = null;
  global.require = function (name) {
    if (!currentRequire) fail("invalid_require_path", "require() is not available here");
    return currentRequire(name);
  };

  // ---- views (map/reduce) ---------------------------------------------------------------
  function mapDoc(doc) {
    var out = [];
    for (var i = 0; i < viewFuns.length; i++) {
      emitted = [];
      try {
        viewFuns[i](doc);
        out.push(emitted);
      } catch (e) {
        var l = errorLine(e);
        global.log("function raised exception " + l[1] + ": " + l[2] + " with doc._id " + (doc && doc._id));
        out.push([]);
      }
    }
    emitted = null;
    return out;
  }
  // Reduce functions compiled once per source (the view's whole life in a
  // session); a function that throws gives null for that call, logged, as
  // couchjs's views.js does; CouchDB's reduce_limit: an answer over 4096
  // bytes and more than half its input is reduce_overflow_error ("log":
  // logged and kept).
  var reduceFuns = Object.create(null), nReduceFuns = 0;
  function reduceFun(src) {
    var f = reduceFuns[src];
    if (!f) {
      if (nReduceFuns >= 64) { reduceFuns = Object.create(null); nReduceFuns = 0; }
      f = reduceFuns[src] = compile(src, "reduce");
      nReduceFuns++;
    }
    return f;
  }
  function runReduce(srcs, keys, values, rereduce) {
    var out = [];
    for (var i = 0; i < srcs.length; i++) {
      var f = reduceFun(srcs[i]);
      try {
        out.push(f(keys, values, rereduce));
      } catch (e) {
        var l = errorLine(e);
        if (e === "fatal_error" || (isArr(e) && e[0] === "fatal")) throw e;
        global.log("function raised exception " + l[1] + ": " + l[2]);
        out.push(null);
      }
    }
    var limit = queryConfig.reduce_limit;
    if (limit && limit !== "false") {
      var outLen = stringify(out).length;
      var inLen = stringify(values).length + (keys ? stringify(keys).length : 0);
      if (outLen > 4096 && outLen * 2 > inLen) {
        var msg = "Reduce output must shrink more rapidly: input size: " + inLen + " output size: " + outLen;
        if (limit === "log") global.log("reduce_overflow_error: " + msg);
        else fail("reduce_overflow_error", msg);
      }
    }
    return [true, out];
  }

  // ---- show, list: provides and responses -------------------------------------------------
  var mimesByKey = Object.create(null), keysByMime = Object.create(null);
  function registerType(key) {
    var types = Array.prototype.slice.call(arguments, 1);
    mimesByKey[key] = types;
    for (var i = 0; i < types.length; i++) keysByMime[types[i]] = key;
  }
  registerType("all", "*/*");
  registerType("text", "text/plain; charset=utf-8", "txt");
  registerType("html", "text/html; charset=utf-8");
  registerType("xhtml", "application/xhtml+xml", "xhtml");
  registerType("xml", "application/xml", "text/xml", "application/x-xml");
  registerType("js", "text/javascript", "application/javascript", "application/x-javascript");
  registerType("css", "text/css");
  registerType("ics", "text/calendar");
  registerType("csv", "text/csv");
  registerType("rss", "application/rss+xml");
  registerType("atom", "application/atom+xml");
  registerType("yaml", "application/x-yaml", "text/yaml");
  registerType("multipart_form", "multipart/form-data");
  registerType("url_encoded_form", "application/x-www-form-urlencoded");
  registerType("json", "application/json", "text/x-json");
  global.registerType = registerType;

  var providers = [], responseMime = null, chunks = [], startResp = {}, gotRow = false, lastRow = false;
  global.provides = function (type, fun) {
    providers.push([type, fun]);
  };
  global.send = function (chunk) { chunks.push(String(chunk)); };
  global.start = function (resp) { startResp = resp || {}; };

  // Accept-header matching (RFC 7231 media ranges and q values).
  function parseRange(r) {
    var parts = r.split(";"), full = parts[0].trim(), q = 1, params = {};
    for (var i = 1; i < parts.length; i++) {
      var kv = parts[i].split("="), k = kv[0].trim(), v = (kv[1] || "").trim();
      if (k === "q") q = parseFloat(v); else if (k) params[k] = v;
    }
    if (full === "*") full = "*/*";
    var ts = full.split("/");
    return { type: ts[0] || "*", sub: ts[1] || "*", q: isNaN(q) ? 1 : q, params: params };
  }
  function fitness(mime, ranges) {
    var t = parseRange(mime), best = -1, bestQ = 0;
    for (var i = 0; i < ranges.length; i++) {
      var r = ranges[i];
      if ((r.type === t.type || r.type === "*" || t.type === "*") && (r.sub === t.sub || r.sub === "*" || t.sub === "*")) {
        var f = (r.type === t.type ? 100 : 0) + (r.sub === t.sub ? 10 : 0);
        for (var p in r.params) if (t.params[p] === r.params[p]) f++;
        if (f > best) { best = f; bestQ = r.q; }
      }
    }
    return best < 0 ? 0 : bestQ;
  }
  function chooseProvider(req) {
    var q = (req && req.query) || {}, i;
    if (q.format !== undefined) {
      for (i = 0; i < providers.length; i++) if (providers[i][0] === q.format) return providers[i];
      fail("render_error", "Content-Type for format " + q.format + " is not provided");
    }
    var accept = req && req.headers && req.headers.Accept;
    if (!accept) return providers[0];
    var ranges = String(accept).split(",").map(parseRange);
    var bestQ = 0, best = null;
    for (i = 0; i < providers.length; i++) {
      var mimes = mimesByKey[providers[i][0]] || [providers[i][0]];
      for (var j = 0; j < mimes.length; j++) {
        var f = fitness(mimes[j], ranges);
        if (f > bestQ) { bestQ = f; best = providers[i]; }
      }
    }
    return best;
  }
  function runProvides(req) {
    var p = chooseProvider(req);
    if (!p) {
      var accept = req && req.query && req.query.format !== undefined ? req.query.format
                 : (req && req.headers && req.headers.Accept) || "";
      fail("not_acceptable", "Content-Type " + accept + " not supported, try one of: " +
           providers.map(function (x) { return (mimesByKey[x[0]] || [x[0]])[0]; }).join(", "));
    }
    responseMime = (mimesByKey[p[0]] || [p[0]])[0];
    return p[1]();
  }
  function resetRender() {
    providers = []; responseMime = null; chunks = []; startResp = {}; gotRow = false; lastRow = false;
  }
  // A show's or update's response object: a string is the body.
  function asResponse(r) {
    if (r === undefined || r === null) return {};
    if (typeof r === "string") return { body: r };
    if (typeof r === "object") return r;
    fail("render_error", "undefined response from show function");
  }
  function withMime(resp) {
    if (responseMime) {
      resp.headers = resp.headers || {};
      if (!resp.headers["Content-Type"]) resp.headers["Content-Type"] = responseMime;
    }
    return resp;
  }

  // A show's or update's throw: an ["error", …] array or {error, reason}
  // passes as it is; anything else is render_error (and for a show of a
  // document id that does not exist, CouchDB's "document not found").
  function renderFailure(e, fun, doc, req, isShow) {
    if (e instanceof Failure || (isArr(e) && e[0] === "error") ||
        (e && typeof e === "object" && !(e instanceof Error) && e.error !== undefined && e.reason !== undefined))
      return e;
    if (isShow && doc === null && req && isArr(req.path) && req.path.length > 5)
      return new Failure("not_found", "document not found");
    var what = e instanceof Error ? e.name + ": " + e.message : toSrc(e);
    return new Failure("render_error", "function raised error: " + what + " \nstacktrace: " + ((e && e.stack) || ""));
  }

  function runShow(ddoc, fun, args) {
    resetRender();
    var doc = args[0], req = args[1], r;
    try {
      r = fun.call(ddoc, doc, req);
      if (r === undefined && providers.length) r = runProvides(req);
    } catch (e) {
      throw renderFailure(e, fun, doc, req, true);
    }
    var resp = r === undefined || r === null || r === false || r === "" && !chunks.length ? {} : asResponse(r);
    if (chunks.length) {
      // send() output goes before the body, and what start() was given
      // becomes headers (render.js's runShow)
      resp.headers = resp.headers || {};
      for (var h in startResp) resp.headers[h] = startResp[h];
      resp.body = chunks.join("") + (resp.body || "");
    }
    resp = withMime(resp);
    resetRender();
    return ["resp", resp];
  }

  function runList(ddoc, fun, args) {
    resetRender();
    var head = args[0], req = args[1];
    global.getRow = function () {
      if (lastRow) return null;
      var line;
      if (!gotRow) {
        gotRow = true;
        line = ["start", chunks, withMime(startResp)];
      } else line = ["chunks", chunks];
      chunks = [];
      var next = parse(nativeExchange(stringify(line)));
      if (next[0] === "list_end") { lastRow = true; return null; }
      if (next[0] !== "list_row") fail("list_error", "not a row '" + next[0] + "'");
      return next[1];
    };
    var tail = fun.call(ddoc, head, req);
    if (tail === undefined && providers.length) tail = runProvides(req);
    if (!gotRow) {
      // The function never asked for a row: start, then the caller ends it.
      gotRow = true;
      var l0 = ["start", chunks, withMime(startResp)];
      chunks = [];
      var n0 = parse(nativeExchange(stringify(l0)));
      while (n0[0] === "list_row") n0 = parse(nativeExchange(stringify(["chunks", []])));
    } else if (!lastRow) {
      var n1;
      do { n1 = parse(nativeExchange(stringify(["chunks", chunks]))); chunks = []; } while (n1[0] === "list_row");
    }
    if (typeof tail === "string") chunks.push(tail);
    var out = ["end", chunks];
    delete global.getRow;
    resetRender();
    return out;
  }

  function runUpdate(ddoc, fun, args) {
    resetRender();
    var req = args[1], r;
    if (req && req.method === "GET") fail("method_not_allowed", "Update functions do not allow GET");
    try {
      r = fun.call(ddoc, args[0], req);
    } catch (e) {
      throw renderFailure(e, fun, args[0], req, false);
    }
    if (!isArr(r) || (typeof r[1] !== "string" && (r[1] === null || typeof r[1] !== "object")))
      fail("render_error", "undefined response from update function");
    var doc = r[0] === undefined ? null : r[0];
    return ["up", doc, asResponse(r[1])];
  }

  function runValidate(ddoc, fun, args) {
    try {
      fun.apply(ddoc, args);
      return 1;
    } catch (e) {
      // CouchDB answers what was thrown ({forbidden: …}, {unauthorized: …},
      // any other object or a string); an Error object is an error line.
      if (e instanceof Failure || e instanceof Error || isArr(e) || e === undefined || e === null) throw e;
      return e;
    }
  }

  function runFilter(ddoc, fun, args) {
    var docs = args[0], req = args[1], out = [];
    for (var i = 0; i < docs.length; i++) out.push(fun.call(ddoc, docs[i], req) ? true : false);
    return [true, out];
  }

  function runViewFilter(ddoc, fun, args) {
    var docs = args[0], out = [];
    for (var i = 0; i < docs.length; i++) {
      emitted = [];
      try { fun.call(ddoc, docs[i]); } finally { var n = emitted.length; emitted = null; }
      out.push(n > 0);
    }
    return [true, out];
  }

  // A rewrite function's answer: ["ok", {path, query, method, headers,
  // body} or {code, headers, body}] or ["no_dispatch_rule"] for a falsy
  // one; the C side checks the fields (chttpd_rewrite's rules).
  function runRewrite(ddoc, fun, args) {
    var r;
    try {
      r = fun.call(ddoc, args[0]);
    } catch (e) {
      if (e && typeof e === "object" && !isArr(e) && !(e instanceof Error)) {
        if (e.forbidden !== undefined) fail("forbidden", String(e.forbidden));
        if (e.unauthorized !== undefined) fail("unauthorized", String(e.unauthorized));
      }
      throw e;
    }
    if (!r) return ["no_dispatch_rule"];
    if (typeof r === "string") r = { path: r };
    return ["ok", r];
  }

  // ---- design documents --------------------------------------------------------------
  function ddocFun(entry, path) {
    var key = path.join("\u0000");
    var f = entry.funs[key];
    if (f) return f;
    var v = entry.doc;
    for (var i = 0; i < path.length; i++) {
      if (v === null || typeof v !== "object" || !hasOwn.call(v, path[i])) { v = undefined; break; }
      v = v[path[i]];
    }
    if (path[0] === "views" && v && typeof v === "object") v = v.map;
    if (v === undefined)
      fail("not_found", "missing " + path[0] + " function " + path.slice(1).join(".") + " on design doc " + entry.doc._id);
    f = compile(v, path.join("."));
    entry.funs[key] = f;
    return f;
  }

  function runDdoc(cmd) {
    if (cmd[1] === "new") {
      ddocs[cmd[2]] = { doc: cmd[3], funs: Object.create(null), modules: Object.create(null) };
      return true;
    }
    if (cmd[1] === "drop") {
      delete ddocs[cmd[2]];
      return true;
    }
    var entry = ddocs[cmd[1]];
    if (!entry) fail("query_protocol_error", "uncached design doc: " + cmd[1]);
    var path = cmd[2], args = cmd[3];
    if (!isArr(path) || !path.length) fail("query_protocol_error", "bad function path");
    var fun = path[0] === "rewrites" && path.length === 1 ? ddocFun(entry, ["rewrites"]) : ddocFun(entry, path);
    if (!isArr(args)) fail("query_protocol_error", "function arguments must be an array");
    var saved = currentRequire;
    currentRequire = makeRequire(entry.doc, entry.modules, null);
    try {
      switch (path[0]) {
        case "validate_doc_update": return runValidate(entry.doc, fun, args);
        case "filters": return runFilter(entry.doc, fun, args);
        case "views": return runViewFilter(entry.doc, fun, args);
        case "updates": return runUpdate(entry.doc, fun, args);
        case "shows": return runShow(entry.doc, fun, args);
        case "lists": return runList(entry.doc, fun, args);
        case "rewrites": return runRewrite(entry.doc, fun, args);
        default: fail("unknown_command", "unknown ddoc command '" + path[0] + "'");
      }
    } finally {
      currentRequire = saved;
      emitted = null;
    }
  }

  function dispatch(cmd) {
    if (!isArr(cmd) || typeof cmd[0] !== "string") fail("query_protocol_error", "a command is an array naming it");
    switch (cmd[0]) {
      case "reset":
        viewFuns = []; viewLib = null; queryConfig = cmd[1] || {};
        reduceFuns = Object.create(null); nReduceFuns = 0;
        return true;
      case "add_lib":
        viewLib = cmd[1];
        return true;
      case "add_fun":
        var f = compile(cmd[1], "map");
        viewFuns.push(f);
        return true;
      case "map_doc":
        var saved = currentRequire;
        currentRequire = viewLib ? makeRequire({ views: { lib: viewLib } }, Object.create(null), null) : null;
        try { return mapDoc(cmd[1]); } finally { currentRequire = saved; }
      case "reduce":
        var kvs = cmd[2] || [], keys = [], values = [];
        for (var i = 0; i < kvs.length; i++) { keys.push(kvs[i][0]); values.push(kvs[i][1]); }
        return runReduce(cmd[1], keys, values, false);
      case "rereduce":
        return runReduce(cmd[1], null, cmd[2] || [], true);
      case "ddoc":
        return runDdoc(cmd);
      default:
        fail("unknown_command", "unknown command '" + cmd[0] + "'");
    }
  }

  global.dv_handle = function (line) {
    var cmd;
    try {
      cmd = parse(line);
    } catch (e) {
      return stringify(["error", "query_protocol_error", "not JSON: " + String(e && e.message)]);
    }
    var out;
    try {
      out = stringify(dispatch(cmd));
      if (out === undefined) out = "null";
    } catch (e) {
      try { out = stringify(errorLine(e)); } catch (e2) { out = '["error","unnamed_error","unprintable error"]'; }
    }
    return out;
  };

  delete global.dv_log;
  delete global.dv_compile;
  delete global.dv_exchange;
})(this);
