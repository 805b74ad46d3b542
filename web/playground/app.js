// The playground: one page that asks through the HTTP/JSON face (/v1:streamAsk, server-sent
// events) and shows the answer as it streams, its citations, the SQL with its rows and the
// chart. Everything the server sends is put in the page as text (textContent), never as
// markup: answers and citations quote documents, which anyone with ingest rights wrote.
// The API key lives in the key field only: never in localStorage, sessionStorage or a
// cookie, so reloading the page forgets it.

import { CODE_TO_HTTP, describeError, sqlValueText, strip } from './format.js';
import { readEvents } from './sse.js';

const $ = (selector, root = document) => root.querySelector(selector);

const state = {
  conversationId: '',
  busy: false,
};

function showError(text) {
  const box = $('#error');
  box.textContent = text;
  box.hidden = !text;
}

async function errorFrom(response) {
  let status = null;
  try {
    status = await response.json();
  } catch {
    // Not JSON (a proxy's page): the HTTP status alone says enough.
  }
  return describeError(response.status, status);
}

function headers() {
  const key = $('#key').value.trim();
  return {
    Authorization: `Bearer ${key}`,
    'Content-Type': 'application/json',
  };
}

// -- rendering ------------------------------------------------------------------------

function locatorOf(citation) {
  if (citation.kind === 'CITATION_KIND_SQL_RESULT') return 'SQL result';
  if (citation.kind === 'CITATION_KIND_CONFIRMED_PAIR') return 'confirmed SQL';
  return citation.section || '';
}

function safeUrl(uri) {
  try {
    const url = new URL(uri);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : null;
  } catch {
    return null;
  }
}

function renderCitation(list, citation) {
  const item = document.createElement('li');
  item.className = 'citation';
  item.dataset.passage = String(citation.passageId ?? '');
  const marker = document.createElement('span');
  marker.className = 'marker';
  marker.textContent = `[${citation.passageId ?? '?'}] `;
  item.append(marker);
  const title = citation.title || citation.documentId || 'source';
  const href = safeUrl(citation.uri || '');
  let titleNode;
  if (href) {
    titleNode = document.createElement('a');
    titleNode.href = href;
    titleNode.target = '_blank';
    titleNode.rel = 'noopener noreferrer';
  } else {
    titleNode = document.createElement('span');
  }
  titleNode.className = 'title';
  titleNode.textContent = title;
  item.append(titleNode);
  const locator = locatorOf(citation);
  if (locator) {
    const where = document.createElement('span');
    where.className = 'locator';
    where.textContent = ` — ${locator}`;
    item.append(where);
  }
  if (citation.quote) {
    const quote = document.createElement('blockquote');
    quote.className = 'quote';
    quote.textContent = citation.quote;
    item.append(quote);
  }
  list.append(item);
}

function renderCitations(turn, citations) {
  const list = $('.citations', turn);
  list.replaceChildren();
  for (const citation of citations) renderCitation(list, citation);
}

async function drawChart(target, specText) {
  let spec;
  try {
    spec = JSON.parse(specText);
  } catch {
    target.textContent = 'The chart specification could not be read.';
    return;
  }
  try {
    const { embed, expressionInterpreter } = await import('./vendor.js');
    // ast + expr: expressions are interpreted, never compiled with new Function (the
    // CSP has no 'unsafe-eval'); no default style or actions menu: both inject inline
    // style or open other origins, which the CSP forbids.
    await embed(target, spec, {
      ast: true,
      expr: expressionInterpreter,
      actions: false,
      defaultStyle: false,
      renderer: 'svg',
      tooltip: false,
    });
    target.dataset.drawn = 'true';
  } catch (error) {
    target.textContent = `The chart could not be drawn: ${error.message}`;
  }
}

function renderSqlResult(turn, step) {
  const result = step.result || {};
  const section = $('#sql-template').content.firstElementChild.cloneNode(true);
  $('.sql code', section).textContent = result.sql || '';
  const columns = result.columns || [];
  const rows = result.rows || [];
  const head = document.createElement('tr');
  for (const column of columns) {
    const th = document.createElement('th');
    th.textContent = column.name;
    th.title = column.dataType || '';
    head.append(th);
  }
  $('thead', section).append(head);
  const body = $('tbody', section);
  for (const row of rows) {
    const tr = document.createElement('tr');
    for (const value of row.values || []) {
      const td = document.createElement('td');
      td.textContent = sqlValueText(value);
      tr.append(td);
    }
    body.append(tr);
  }
  const total = Number(result.rowCount ?? rows.length);
  $('.rows-note', section).textContent =
    `${total} row${total === 1 ? '' : 's'}${result.truncated ? ' (truncated)' : ''}` +
    (result.database ? ` from ${result.database}` : '');
  $('.sql-results', turn).append(section);
  const chart = result.chart || {};
  if (chart.vegaLite) {
    drawChart($('.chart', section), chart.vegaLite);
  } else if (chart.reason) {
    $('.chart', section).textContent = `No chart: ${chart.reason}`;
  }
}

function renderDegraded(turn, answer) {
  const box = $('.degraded', turn);
  const list = $('.degradations', box);
  list.replaceChildren();
  for (const d of answer.degradations || []) {
    const item = document.createElement('li');
    const reason = strip(d.reason, 'DEGRADATION_REASON_');
    item.textContent = `${reason}${d.component ? ` — ${d.component}` : ''}${d.message ? `: ${d.message}` : ''}`;
    list.append(item);
  }
  box.hidden = !answer.degraded && list.children.length === 0;
}

function renderFinal(turn, answer) {
  $('.answer', turn).textContent = answer.text || '';
  const outcome = strip(answer.outcome, 'ANSWER_OUTCOME_');
  const route = strip(answer.route, 'ROUTE_');
  const parts = [outcome.toLowerCase() || 'done'];
  if (route && route !== 'UNSPECIFIED') parts.push(`route ${route.toLowerCase()}`);
  if (answer.refusalReason) parts.push(`declined: ${answer.refusalReason}`);
  $('.status', turn).textContent = parts.join(' · ');
  turn.dataset.outcome = outcome;
  const disclaimer = $('.disclaimer', turn);
  disclaimer.textContent = answer.disclaimer || '';
  disclaimer.hidden = !answer.disclaimer;
  renderDegraded(turn, answer);
  renderCitations(turn, answer.citations || []);
  for (const step of answer.sqlResults || []) renderSqlResult(turn, step);
  if (answer.answerId) {
    const feedback = $('.feedback', turn);
    feedback.hidden = false;
    feedback.dataset.answerId = answer.answerId;
  }
  if (answer.conversationId) setConversation(answer.conversationId);
}

function setConversation(id) {
  state.conversationId = id;
  $('#conversation-id').textContent = id;
  $('#conversation-label').textContent = id ? 'Follow-ups continue conversation' : 'New conversation';
  $('#new-conversation').hidden = !id;
}

// -- calls ----------------------------------------------------------------------------

const marks = new Set();

function markOnce(name) {
  // Timing marks of the page's first answer, which a test reads (performance
  // .getEntriesByName): its first event, its first text received, its first text painted.
  if (marks.has(name)) return;
  marks.add(name);
  performance.mark(name);
}

async function ask(event) {
  event.preventDefault();
  if (state.busy) return;
  showError('');
  const question = $('#question').value.trim();
  const key = $('#key').value.trim();
  if (!key) {
    showError('Paste an API key first.');
    return;
  }
  if (!/^[\x21-\x7e]+$/.test(key)) {
    // fetch() cannot send such a header at all; no key has these characters.
    showError('The API key holds spaces or characters no key has: paste it again.');
    return;
  }
  if (!question) return;
  const request = { question, mode: $('#mode').value };
  const database = $('#database').value.trim();
  if (database) request.options = { database };
  if (state.conversationId) request.conversationId = state.conversationId;

  const turn = $('#turn-template').content.firstElementChild.cloneNode(true);
  $('.question', turn).textContent = question;
  $('.status', turn).textContent = 'asking…';
  $('#turns').prepend(turn);
  state.busy = true;
  $('#ask-button').disabled = true;
  turn.dataset.state = 'streaming';
  try {
    const response = await fetch('/v1:streamAsk', {
      method: 'POST',
      headers: { ...headers(), Accept: 'text/event-stream' },
      body: JSON.stringify(request),
      cache: 'no-store',
      credentials: 'omit',
      referrerPolicy: 'no-referrer',
    });
    if (!response.ok) {
      const text = await errorFrom(response);
      turn.remove();
      showError(text);
      return;
    }
    await stream(turn, response);
  } catch (error) {
    showError(`The server could not be reached: ${error.message}`);
    $('.status', turn).textContent = 'failed';
  } finally {
    turn.dataset.state = 'done';
    state.busy = false;
    $('#ask-button').disabled = false;
  }
}

async function stream(turn, response) {
  const answerNode = $('.answer', turn);
  const citations = [];
  let finished = false;
  for await (const { event, data } of readEvents(response)) {
    if (event === 'error') {
      let status = null;
      try {
        status = JSON.parse(data);
      } catch {
        // keep null
      }
      const http = CODE_TO_HTTP[status?.code] || 500;
      showError(describeError(http, status));
      $('.status', turn).textContent = 'failed';
      return;
    }
    let message;
    try {
      message = JSON.parse(data);
    } catch {
      continue;
    }
    markOnce('tandem:first-event');
    if (message.accepted) {
      $('.status', turn).textContent = 'thinking…';
      if (message.accepted.conversationId) setConversation(message.accepted.conversationId);
    } else if (message.stepStarted) {
      $('.status', turn).textContent = 'working…';
    } else if (message.answerDelta) {
      markOnce('tandem:first-delta');
      answerNode.append(message.answerDelta.text || '');
      $('.status', turn).textContent = 'answering…';
      if (!marks.has('tandem:first-token-shown')) {
        requestAnimationFrame(() => markOnce('tandem:first-token-shown'));
      }
    } else if (message.citation) {
      citations.push(message.citation);
      renderCitations(turn, citations);
    } else if (message.finalAnswer) {
      renderFinal(turn, message.finalAnswer);
      finished = true;
    }
  }
  if (!finished) {
    showError('The answer stream ended before the answer was complete.');
    $('.status', turn).textContent = 'cut off';
  }
}

async function feedback(event) {
  const button = event.target.closest('button');
  if (!button || !(button.classList.contains('helpful') || button.classList.contains('wrong'))) {
    return;
  }
  const box = button.closest('.feedback');
  const rating = button.classList.contains('helpful') ? 'FEEDBACK_RATING_HELPFUL' : 'FEEDBACK_RATING_WRONG';
  const note = $('.feedback-status', box);
  note.textContent = 'sending…';
  try {
    const response = await fetch('/v1/sqlFeedback', {
      method: 'POST',
      headers: headers(),
      body: JSON.stringify({ answerId: box.dataset.answerId, rating }),
      cache: 'no-store',
      credentials: 'omit',
    });
    if (!response.ok) {
      note.textContent = '';
      showError(await errorFrom(response));
      return;
    }
    note.textContent = rating === 'FEEDBACK_RATING_HELPFUL' ? 'Thanks: marked helpful.' : 'Thanks: marked wrong.';
    box.dataset.sent = rating;
    for (const b of box.querySelectorAll('button')) b.disabled = true;
  } catch (error) {
    note.textContent = '';
    showError(`The server could not be reached: ${error.message}`);
  }
}

function start() {
  $('#ask').addEventListener('submit', ask);
  $('#question').addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey) {
      event.preventDefault();
      $('#ask').requestSubmit();
    }
  });
  $('#new-conversation').addEventListener('click', () => setConversation(''));
  $('#turns').addEventListener('click', feedback);
  document.body.dataset.ready = 'true';
}

start();
