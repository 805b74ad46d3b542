// The SSE parser against the stream format the HTTP face sends (one `event:` + `data:`
// per message, a blank line after each), cut into chunks at every possible place.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { SseParser } from '../sse.js';

const STREAM =
  'event: message\ndata: {"accepted":{"requestId":"r1"}}\n\n' +
  ': keep-alive\n\n' +
  'event: message\r\ndata: {"answerDelta":{"text":"Hé [1]"}}\r\n\r\n' +
  'data: line one\ndata: line two\n\n' +
  'event: error\rdata: {"code":14}\r\r\n';
const EXPECTED = [
  { event: 'message', data: '{"accepted":{"requestId":"r1"}}' },
  { event: 'message', data: '{"answerDelta":{"text":"Hé [1]"}}' },
  { event: 'message', data: 'line one\nline two' },
  { event: 'error', data: '{"code":14}' },
];

test('a whole stream in one chunk', () => {
  assert.deepEqual(new SseParser().feed(STREAM), EXPECTED);
});

test('every split into two chunks gives the same events', () => {
  for (let cut = 0; cut <= STREAM.length; cut += 1) {
    const parser = new SseParser();
    const events = [...parser.feed(STREAM.slice(0, cut)), ...parser.feed(STREAM.slice(cut))];
    assert.deepEqual(events, EXPECTED, `cut at ${cut}`);
  }
});

test('one character at a time', () => {
  const parser = new SseParser();
  const events = [];
  for (const ch of STREAM) events.push(...parser.feed(ch));
  assert.deepEqual(events, EXPECTED);
});

test('an event without its blank line is not delivered', () => {
  assert.deepEqual(new SseParser().feed('event: message\ndata: {"x":1}\n'), []);
});
