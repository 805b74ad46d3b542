// How the page words what the HTTP face returns: errors (google.rpc.Status JSON) and SQL
// values (proto3 JSON of SqlValue). Free of the DOM so that node --test checks it
// (test/format.test.js).

// What each HTTP status of the face means to the person at the page (gRPC transcoding's
// table: https://github.com/googleapis/googleapis/blob/master/google/rpc/code.proto).
const STATUS_TEXT = {
  400: 'The request was refused as invalid',
  401: 'The API key was refused (wrong, revoked or missing)',
  403: 'This API key lacks the scope for this call',
  404: 'Not found',
  409: 'Conflict: changed meanwhile, try again',
  429: 'Over quota',
  499: 'Cancelled',
  500: 'The server failed',
  501: 'Not implemented by this server',
  503: 'A service is unavailable',
  504: 'The deadline passed before the answer was ready',
};
// gRPC status code -> HTTP status, for an error event after the stream began (the
// face's SSE `event: error` carries the Status without an HTTP status of its own).
export const CODE_TO_HTTP = {
  1: 499, 2: 500, 3: 400, 4: 504, 5: 404, 6: 409, 7: 403, 8: 429, 9: 400, 10: 409,
  11: 400, 12: 501, 13: 500, 14: 503, 15: 500, 16: 401,
};
const TYPE = 'type.googleapis.com/google.rpc.';

export function strip(name, prefix) {
  return typeof name === 'string' && name.startsWith(prefix) ? name.slice(prefix.length) : String(name ?? '');
}

/** A google.rpc.Status (the face's error body) as plain lines: the status in words with
 * its reason, the message, then the service, fields and retry delay the details name. */
export function describeError(httpStatus, status) {
  const lines = [];
  const head = STATUS_TEXT[httpStatus] || 'Error';
  const details = Array.isArray(status?.details) ? status.details : [];
  const info = details.find((d) => d['@type'] === `${TYPE}ErrorInfo`);
  const retry = details.find((d) => d['@type'] === `${TYPE}RetryInfo`);
  const bad = details.find((d) => d['@type'] === `${TYPE}BadRequest`);
  let summary = `${httpStatus} ${head}`;
  if (info?.reason) summary += ` (${info.reason})`;
  lines.push(summary);
  if (status?.message) lines.push(status.message);
  const service = info?.metadata?.service;
  if (service) lines.push(`Service: ${service}`);
  for (const violation of bad?.fieldViolations || []) {
    lines.push(`${violation.field}: ${violation.description}`);
  }
  if (retry?.retryDelay) lines.push(`Retry after ${retry.retryDelay}`);
  return lines.join('\n');
}

/** One SqlValue (proto3 JSON: exactly one field set) as display text. */
export function sqlValueText(value) {
  if (value === null || typeof value !== 'object') return '';
  const [kind, inner] = Object.entries(value)[0] || [];
  if (kind === undefined || kind === 'nullValue') return 'NULL';
  if (kind === 'arrayValue') return `[${(inner.values || []).map(sqlValueText).join(', ')}]`;
  return String(inner);
}
