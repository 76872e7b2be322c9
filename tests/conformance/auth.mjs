// Preloaded into the conformance suite (node --import): every HTTP request
// it makes carries "Authorization: Bearer $TFS_CONFORMANCE_TOKEN", as an
// MCP host configured with the token of `taskfs serve` sends it. The suite
// has no option for headers. Its SDK client (fetch) and some raw probes
// (undici's request: dns-rebinding-protection) go through undici's global
// dispatcher, which this replaces with one that adds the header; other raw
// probes (http-header-validation) use node:http, whose request() this
// wraps. Nothing else of a request is changed: Host, Origin and every MCP
// header stay the suite's.
import http from 'node:http';
import { createRequire } from 'node:module';

const require = createRequire(new URL('./node_modules/@modelcontextprotocol/conformance/', import.meta.url));
const { Agent, setGlobalDispatcher } = require('undici');
const token = process.env.TFS_CONFORMANCE_TOKEN;

function withAuth(headers) {
  const auth = `Bearer ${token}`;
  if (!headers) return { authorization: auth };
  if (Array.isArray(headers)) {
    const flat = headers.flat();
    for (let i = 0; i < flat.length; i += 2)
      if (String(flat[i]).toLowerCase() === 'authorization') return headers;
    return [...flat, 'authorization', auth];
  }
  if (typeof headers[Symbol.iterator] === 'function' && typeof headers !== 'string') {
    const out = {};
    for (const [k, v] of headers) out[k] = v;
    return withAuth(out);
  }
  if (Object.keys(headers).some((k) => k.toLowerCase() === 'authorization')) return headers;
  return { ...headers, authorization: auth };
}

if (token) {
  const agent = new Agent().compose((dispatch) => (opts, handler) =>
    dispatch({ ...opts, headers: withAuth(opts.headers) }, handler));
  setGlobalDispatcher(agent);
}

if (token) {
  const request = http.request;
  http.request = function (url, options, cb) {
    if (url && typeof url === 'object' && !(url instanceof URL)) url = { ...url, headers: withAuth(url.headers) };
    else if (options && typeof options === 'object') options = { ...options, headers: withAuth(options.headers) };
    return request.call(this, url, options, cb);
  };
}
