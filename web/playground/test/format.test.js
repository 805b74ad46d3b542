// How errors and SQL values are worded, from the JSON the HTTP face sends.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { CODE_TO_HTTP, describeError, sqlValueText } from '../format.js';

const INFO = 'type.googleapis.com/google.rpc.ErrorInfo';

test('a wrong key: 401 in words with its reason and message', () => {
  const status = {
    code: 16,
    message: 'invalid API key',
    details: [{ '@type': INFO, reason: 'API_KEY_INVALID', domain: 'tandem' }],
  };
  assert.equal(
    describeError(401, status),
    '401 The API key was refused (wrong, revoked or missing) (API_KEY_INVALID)\ninvalid API key',
  );
});

test('an unavailable service is named, a quota says when to retry, a bad field is named', () => {
  const down = describeError(503, {
    code: 14,
    message: 'the sql service is unavailable; retry later',
    details: [{ '@type': INFO, reason: 'DEPENDENCY_UNAVAILABLE', metadata: { service: 'sql' } }],
  });
  assert.match(down, /^503 A service is unavailable \(DEPENDENCY_UNAVAILABLE\)\n/);
  assert.match(down, /\nService: sql$/);
  const quota = describeError(429, {
    code: 8,
    details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '0.050s' }],
  });
  assert.match(quota, /^429 Over quota\nRetry after 0\.050s$/);
  const bad = describeError(400, {
    code: 3,
    message: 'question: must not be empty',
    details: [
      {
        '@type': 'type.googleapis.com/google.rpc.BadRequest',
        fieldViolations: [{ field: 'question', description: 'must not be empty' }],
      },
    ],
  });
  assert.match(bad, /\nquestion: must not be empty$/);
});

test('a body that is not a Status still gives the HTTP status', () => {
  assert.equal(describeError(502, null), '502 Error');
  assert.equal(CODE_TO_HTTP[14], 503);
  assert.equal(CODE_TO_HTTP[7], 403);
});

test('SQL values as text: int64 strings, NULL, decimals, arrays', () => {
  assert.equal(sqlValueText({ intValue: '9007199254740993' }), '9007199254740993');
  assert.equal(sqlValueText({ nullValue: null }), 'NULL');
  assert.equal(sqlValueText({ decimalValue: '1234.50' }), '1234.50');
  assert.equal(sqlValueText({ boolValue: false }), 'false');
  assert.equal(
    sqlValueText({ arrayValue: { values: [{ stringValue: 'a' }, { nullValue: null }] } }),
    '[a, NULL]',
  );
});
