// Server-sent events from a fetch() body. EventSource cannot POST a body or send an
// Authorization header, so the page reads the stream itself and parses it here
// (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation).
// Kept free of the DOM so that node --test can check it (test/sse.test.js).

/**
 * Incremental parser: feed() text as it arrives (chunks may split lines or events
 * anywhere), get back the events each chunk completed as {event, data}.
 */
export class SseParser {
  constructor() {
    this.buffer = '';
    this.event = '';
    this.data = [];
  }

  /** @param {string} text @returns {{event: string, data: string}[]} */
  feed(text) {
    this.buffer += text;
    const done = [];
    let start = 0;
    for (;;) {
      const lf = this.buffer.indexOf('\n', start);
      const cr = this.buffer.indexOf('\r', start);
      let end = lf;
      if (cr !== -1 && (lf === -1 || cr < lf)) end = cr;
      if (end === -1) break;
      // A CR at the very end may be the first half of a CRLF: wait for the next chunk.
      if (end === cr && end === this.buffer.length - 1) break;
      const line = this.buffer.slice(start, end);
      start = end + (end === cr && this.buffer[end + 1] === '\n' ? 2 : 1);
      this.line(line, done);
    }
    this.buffer = this.buffer.slice(start);
    return done;
  }

  line(line, done) {
    if (line === '') {
      if (this.data.length > 0) {
        done.push({ event: this.event || 'message', data: this.data.join('\n') });
      }
      this.event = '';
      this.data = [];
      return;
    }
    if (line.startsWith(':')) return; // a comment (keep-alive)
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.event = value;
    else if (field === 'data') this.data.push(value);
  }
}

/**
 * Every event of a fetch Response's body, as it arrives.
 * @param {Response} response
 */
export async function* readEvents(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const parser = new SseParser();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    yield* parser.feed(value);
  }
  // An event cut off by the end of the stream (no blank line after it) is dropped, as
  // the standard says; the caller notices the missing final answer.
}
