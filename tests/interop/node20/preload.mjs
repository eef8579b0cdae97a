// Preload for running @modelcontextprotocol/conformance on Node 20 (node --import this file).
//
// 1. The runner imports `globSync` from 'fs', which only Node >= 22 has. Where it is missing, a
//    module hook answers imports of 'fs' / 'node:fs' with the real module plus a small globSync.
// 2. Its mock servers call listen(0) with no host, which binds every interface. Every TCP
//    listen() in the process is pinned to 127.0.0.1 instead. A listen with a host normally
//    resolves the host asynchronously, so address() would be null right after listen() (one
//    scenario reads it at once); the IP literal is resolved synchronously during our listen().
import dns from 'node:dns';
import fs from 'node:fs';
import net from 'node:net';
import { register } from 'node:module';

const HOST = '127.0.0.1';

if (typeof fs.globSync !== 'function') register('./fs-hook.mjs', import.meta.url);

const originalLookup = dns.lookup;
let resolvingOurHost = false;

dns.lookup = function lookup(hostname, options, callback) {
  const done = typeof options === 'function' ? options : callback;
  if (resolvingOurHost && hostname === HOST && typeof done === 'function') {
    const all = typeof options === 'object' && options !== null && options.all;
    if (all) done(null, [{ address: HOST, family: 4 }]);
    else done(null, HOST, 4);
    return {};
  }
  return originalLookup.apply(this, arguments);
};

function onLoopback(args) {
  const rest = [...args];
  const callback = typeof rest[rest.length - 1] === 'function' ? rest.pop() : undefined;
  const first = rest[0];
  let options;
  if (first !== null && typeof first === 'object') {
    const other = first.path != null || first.fd != null || first.handle != null || '_handle' in first;
    if (other) return null; // a pipe, a file descriptor or a handle: leave it alone
    options = { ...first };
  } else if (first === undefined || first === null || typeof first === 'number' || /^\d+$/.test(String(first))) {
    options = { port: Number(first ?? 0) };
    const backlog = rest.slice(1).find((value) => typeof value === 'number');
    if (backlog !== undefined) options.backlog = backlog;
  } else {
    return null; // listen(path): a pipe
  }
  options.host = HOST;
  return callback === undefined ? [options] : [options, callback];
}

const originalListen = net.Server.prototype.listen;
net.Server.prototype.listen = function listen(...args) {
  const pinned = onLoopback(args);
  if (pinned === null) return originalListen.apply(this, args);
  resolvingOurHost = true;
  try {
    return originalListen.apply(this, pinned);
  } finally {
    resolvingOurHost = false;
  }
};
