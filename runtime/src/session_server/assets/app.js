// The browser view of `ofc serve` (see runtime/src/session_server/web.rs).
//
// The token comes in the address's fragment (`#token=…`), is kept in this tab's
// sessionStorage and taken out of the address bar; every call sends it as a Bearer header.
// The event stream is read with fetch() and parsed here (an EventSource cannot send a
// header); after a cut it is asked for again with `Last-Event-ID`, the last stored event's
// seq. Agents' text is only ever written with textContent.
'use strict';

(() => {
  const TOKEN_KEY = 'ofc-serve-token';
  const $ = (id) => document.getElementById(id);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };

  let token = null;
  let view = null; // the SessionView shown, if any

  // ---- the token and the address -------------------------------------------------------

  function readFragment() {
    const params = new URLSearchParams(location.hash.slice(1));
    const t = params.get('token');
    if (t) {
      sessionStorage.setItem(TOKEN_KEY, t);
      params.delete('token');
      const rest = params.toString();
      history.replaceState(null, '', location.pathname + location.search + (rest ? '#' + rest : ''));
    }
    token = sessionStorage.getItem(TOKEN_KEY);
    return params;
  }

  class HttpError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  function lock(why) {
    if (view) view.stop();
    view = null;
    show('locked');
    $('locked-why').textContent = why || '';
  }

  async function api(method, path, body) {
    const init = {
      method,
      headers: { Authorization: 'Bearer ' + token, Accept: 'application/json' },
      cache: 'no-store',
      credentials: 'omit',
    };
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const r = await fetch(path, init);
    const text = await r.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch (_) {
      data = null;
    }
    if (!r.ok) {
      const message = (data && data.message) || text || r.statusText;
      if (r.status === 401) lock('The server refused the token: ' + message);
      throw new HttpError(r.status, data && data.code, message);
    }
    return data;
  }

  function show(id) {
    for (const s of ['loading', 'locked', 'picker', 'session']) $(s).hidden = s !== id;
  }

  function route() {
    const params = readFragment();
    if (!token) {
      lock();
      return;
    }
    const id = params.get('session');
    if (view && view.id === id) return;
    if (view) view.stop();
    view = null;
    if (id) {
      view = new SessionView(id);
      view.start();
    } else {
      openPicker();
    }
  }

  function sessionLink(id) {
    return '#session=' + encodeURIComponent(id);
  }

  // ---- the session picker --------------------------------------------------------------

  function when(rfc3339) {
    if (!rfc3339) return '';
    const d = new Date(rfc3339);
    return isNaN(d) ? rfc3339 : d.toLocaleString();
  }

  async function openPicker() {
    show('picker');
    document.title = 'Sessions · ofc serve';
    const list = $('sessions');
    const status = $('picker-status');
    status.textContent = 'Loading the sessions…';
    try {
      const data = await api('GET', '/api/v1/sessions');
      list.replaceChildren();
      for (const s of data.sessions) {
        const li = el('li', 'session-item');
        li.dataset.id = s.id;
        const a = el('a', 'mono', s.id.slice(0, 8));
        a.href = sessionLink(s.id);
        a.setAttribute('aria-label', 'Session ' + s.id);
        li.append(a);
        if (s.live) li.append(el('span', 'badge live', 'live'));
        li.append(el('span', 'meta', s.event_count + ' events'));
        const at = s.last_activity || s.created_at;
        if (at) li.append(el('span', 'meta', when(at)));
        list.append(li);
        if (s.blueprint) $('blueprint').textContent = s.blueprint;
      }
      const n = data.sessions.length;
      status.textContent = n ? n + (n === 1 ? ' session' : ' sessions') : 'No sessions yet: start one.';
    } catch (e) {
      if (e.status === 403) {
        status.textContent = 'This token opens one session only: open its address with #session=<id>.';
      } else if (e.status !== 401) {
        status.textContent = 'Cannot list the sessions: ' + e.message;
      }
    }
  }

  async function newSession() {
    const button = $('new-session');
    button.disabled = true;
    $('picker-status').textContent = 'Starting a floor…';
    try {
      const opened = await api('POST', '/api/v1/sessions');
      location.hash = sessionLink(opened.id);
    } catch (e) {
      if (e.status !== 401) $('picker-status').textContent = 'Cannot start a session: ' + e.message;
    } finally {
      button.disabled = false;
    }
  }

  // ---- the event stream ----------------------------------------------------------------

  // Reads `…/events` from `last` on, calling `onEvent(type, data, id)` for each event, and
  // asks again after a cut with Last-Event-ID. Ends when the server ends the stream (the
  // session's floor closed, or a stored session was streamed to its end).
  class Watch {
    constructor(id, onEvent, onLink) {
      this.id = id;
      this.last = 0;
      this.onEvent = onEvent;
      this.onLink = onLink;
      this.abort = new AbortController();
      this.stopped = false;
    }

    stop() {
      this.stopped = true;
      this.abort.abort();
    }

    async run() {
      let delay = 250;
      while (!this.stopped) {
        try {
          const r = await fetch('/api/v1/sessions/' + encodeURIComponent(this.id) + '/events', {
            headers: {
              Authorization: 'Bearer ' + token,
              Accept: 'text/event-stream',
              'Last-Event-ID': String(this.last),
            },
            cache: 'no-store',
            credentials: 'omit',
            signal: this.abort.signal,
          });
          if (r.status === 401) {
            lock('The server refused the token.');
            return;
          }
          if (!r.ok) {
            let message = r.statusText;
            try {
              message = (await r.json()).message || message;
            } catch (_) { /* not JSON */ }
            if (r.status === 403 || r.status === 404) {
              this.onLink('gone', message);
              return;
            }
            throw new Error(message);
          }
          this.onLink('up');
          delay = 250;
          await this.read(r.body);
          this.onLink('ended');
          return;
        } catch (e) {
          if (this.stopped) return;
          this.onLink('down', e.message);
          await new Promise((done) => setTimeout(done, delay));
          delay = Math.min(delay * 2, 8000);
        }
      }
    }

    async read(body) {
      const reader = body.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      let event = { id: null, type: '', data: [] };
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += decoder.decode(value, { stream: true });
        let end;
        while ((end = buffer.indexOf('\n')) >= 0) {
          let line = buffer.slice(0, end);
          buffer = buffer.slice(end + 1);
          if (line.endsWith('\r')) line = line.slice(0, -1);
          if (line === '') {
            if (event.data.length) this.dispatch(event);
            event = { id: null, type: '', data: [] };
            continue;
          }
          if (line.startsWith(':')) continue; // a keep-alive
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          let value2 = colon < 0 ? '' : line.slice(colon + 1);
          if (value2.startsWith(' ')) value2 = value2.slice(1);
          if (field === 'id') event.id = value2;
          else if (field === 'event') event.type = value2;
          else if (field === 'data') event.data.push(value2);
        }
      }
    }

    dispatch(event) {
      let data;
      try {
        data = JSON.parse(event.data.join('\n'));
      } catch (_) {
        return;
      }
      const seq = event.id === null ? null : Number(event.id);
      // A stored event seen once only, whatever a reconnection sends.
      if (seq !== null && seq <= this.last) return;
      this.onEvent(event.type || 'message', data, seq);
      if (seq !== null) this.last = seq;
    }
  }

  // ---- one session ---------------------------------------------------------------------

  class SessionView {
    constructor(id) {
      this.id = id;
      this.messages = new Map(); // message id → its item
      this.calls = new Map(); // call → {agent, item, text}: answers streaming now
      this.early = new Map(); // call → {agent, text}: pieces come before their `responding`
      this.speaking = new Map(); // agent → calls
      this.agents = [];
      this.turn = false;
      this.polling = null;
      this.live = false;
      this.closed = false;
      this.link = 'up';
      this.watch = null;
    }

    stop() {
      if (this.watch) this.watch.stop();
    }

    async start() {
      show('session');
      document.title = 'Session ' + this.id.slice(0, 8) + ' · ofc serve';
      $('session-id').textContent = this.id.slice(0, 8);
      $('log').replaceChildren();
      $('agents').replaceChildren();
      $('error').textContent = '';
      $('resume-bar').hidden = true;
      this.state('loading', 'Loading…');
      let info;
      try {
        info = await api('GET', '/api/v1/sessions/' + encodeURIComponent(this.id));
      } catch (e) {
        if (e.status !== 401) {
          this.state('gone', 'Cannot open this session: ' + e.message);
          this.setCompose(false);
        }
        return;
      }
      if (view !== this) return;
      this.live = info.live;
      if (info.blueprint) $('blueprint').textContent = info.blueprint;
      this.setAgents(info.agents);
      $('resume-bar').hidden = info.live;
      this.render();
      this.watch = new Watch(
        this.id,
        (type, data, seq) => this.onEvent(type, data, seq),
        (state, why) => this.onLink(state, why),
      );
      this.watch.run();
    }

    onLink(state, why) {
      this.link = state;
      if (state === 'ended') {
        this.live = false;
        this.turn = false;
        this.speaking.clear();
        this.closeAll();
        $('resume-bar').hidden = false;
      }
      if (state === 'gone') $('error').textContent = why || '';
      this.render();
    }

    state(name, text) {
      const s = $('floor-state');
      s.dataset.state = name;
      s.textContent = text;
    }

    render() {
      if (this.link === 'down') {
        this.state('reconnecting', 'Connection lost: reconnecting…');
      } else if (!this.live) {
        this.state('closed', 'Not on a floor now: resume the session to talk.');
      } else if (this.speaking.size) {
        const who = [...this.speaking.keys()].join(', ');
        this.state('speaking', who + (this.speaking.size > 1 ? ' are' : ' is') + ' answering.');
      } else if (this.turn && this.polling) {
        this.state('deciding', 'Deciding who speaks next: ' + this.polling.join(', ') + '.');
      } else if (this.turn) {
        this.state('busy', 'The floor is working.');
      } else {
        this.state('waiting', 'Waiting for your message.');
      }
      for (const chip of $('agents').children) {
        const speaking = this.speaking.has(chip.dataset.agent);
        chip.classList.toggle('speaking', speaking);
        chip.querySelector('.what').textContent = speaking ? 'speaking' : 'listening';
      }
      $('cancel').disabled = !(this.live && this.turn);
      this.setCompose(this.live);
    }

    setCompose(on) {
      $('message').disabled = !on;
      $('send').disabled = !on;
    }

    setAgents(agents) {
      this.agents = agents || [];
      const list = $('agents');
      list.replaceChildren();
      for (const a of this.agents) {
        const li = el('li', 'agent');
        li.dataset.agent = a;
        li.append(el('span', 'name', a), el('span', 'what', 'listening'));
        list.append(li);
      }
    }

    note(text, cls) {
      const li = el('li', 'note' + (cls ? ' ' + cls : ''), text);
      this.append(li);
    }

    append(item) {
      const log = $('log');
      const atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 40;
      log.append(item);
      if (atEnd) log.scrollTop = log.scrollHeight;
    }

    onEvent(type, data, seq) {
      if (type === 'delta') {
        this.piece(data);
        return;
      }
      const p = data.payload || {};
      const room = data.room_id && data.room_id !== '#main' ? data.room_id : null;
      switch (data.payload_type) {
        case 'message_posted':
          this.message(p.message, seq, room);
          break;
        case 'turn_started':
          this.turn = true;
          break;
        case 'polling':
          this.polling = p.candidates || [];
          break;
        case 'should_wake':
          this.polling = null;
          break;
        case 'responding':
          this.polling = null;
          this.responding(p.call, p.agent);
          break;
        case 'call_finished':
          this.finished(p.call, p.agent, p.outcome || {});
          break;
        case 'turn_ended':
          this.turn = false;
          this.polling = null;
          this.speaking.clear();
          this.closeAll();
          if (p.cancelled) this.note('The turn was cancelled.', 'cancelled');
          break;
        case 'queued':
          this.note('Your message waits for the running turn (' + p.position + ' in the queue).');
          break;
        case 'roster':
          this.setAgents(p.agents);
          break;
        case 'cleared':
          this.note('The conversation was cleared: the agents forgot ' + p.forgotten + ' messages.');
          break;
        case 'closed':
          // A floor of this session closed: this one, or an earlier one (a resumed session's
          // log holds each). The stream's end says whether this one did.
          this.turn = false;
          this.speaking.clear();
          this.closeAll();
          this.note('The session\'s floor closed.');
          break;
        default:
          return; // grants, task boards, transcript lines, compactions: not shown
      }
      this.render();
    }

    message(m, seq, room) {
      if (!m || this.messages.has(m.id)) return;
      // The stored message replaces its speaker's streamed text.
      for (const [call, c] of this.calls) {
        if (c.agent === m.from) this.closeCall(call);
      }
      for (const [call, e] of this.early) {
        if (e.agent === m.from) this.early.delete(call);
      }
      const li = el('li', 'msg' + (m.from === '@user' ? ' user' : ''));
      li.dataset.id = m.id;
      li.dataset.from = m.from;
      if (seq !== null) li.dataset.seq = String(seq);
      const head = el('div', 'head');
      head.append(el('span', 'from', m.from));
      if (room) head.append(el('span', 'badge', room));
      if (m.timestamp) head.append(el('span', 'meta', when(m.timestamp)));
      li.append(head, el('div', 'content', m.content));
      const calls = m.tool_calls || [];
      const results = m.tool_results || [];
      calls.forEach((call, i) => li.append(this.toolCall(call, results[i])));
      this.messages.set(m.id, li);
      this.append(li);
    }

    toolCall(call, result) {
      const d = el('details', 'tool');
      d.append(el('summary', null, 'Tool call: ' + call.name));
      d.append(el('div', 'label', 'Arguments'));
      d.append(el('pre', 'args', JSON.stringify(call.arguments || {}, null, 2)));
      if (result !== undefined) {
        d.append(el('div', 'label', 'Result'));
        d.append(el('pre', 'result', typeof result === 'string' ? result : JSON.stringify(result, null, 2)));
      }
      return d;
    }

    responding(call, agent) {
      const key = String(call);
      if (!this.speaking.has(agent)) this.speaking.set(agent, new Set());
      this.speaking.get(agent).add(key);
      if (this.calls.has(key)) return;
      const li = el('li', 'msg streaming');
      li.dataset.call = key;
      li.dataset.from = agent;
      li.setAttribute('aria-busy', 'true');
      const head = el('div', 'head');
      head.append(el('span', 'from', agent), el('span', 'meta', 'answering…'));
      const text = el('div', 'content');
      li.append(head, text);
      const early = this.early.get(key);
      this.early.delete(key);
      if (early) text.textContent = early.text;
      this.calls.set(key, { agent, item: li, text });
      this.append(li);
    }

    piece(d) {
      const key = String(d.call);
      const c = this.calls.get(key);
      if (c) {
        c.text.textContent += d.content;
        const log = $('log');
        if (log.scrollTop + log.clientHeight >= log.scrollHeight - 80) log.scrollTop = log.scrollHeight;
        return;
      }
      const e = this.early.get(key) || { agent: d.agent, text: '' };
      e.text += d.content;
      this.early.set(key, e);
    }

    finished(call, agent, outcome) {
      const key = String(call);
      this.closeCall(key);
      this.early.delete(key);
      const calls = this.speaking.get(agent);
      if (calls) {
        calls.delete(key);
        if (!calls.size) this.speaking.delete(agent);
      }
      if (outcome.outcome === 'passed') {
        this.note(agent + ' passed' + (outcome.reason ? ': ' + outcome.reason : '.'));
      } else if (outcome.outcome === 'failed') {
        this.note(agent + ' failed: ' + outcome.error, 'failed');
      }
    }

    closeCall(key) {
      const c = this.calls.get(key);
      if (!c) return;
      c.item.remove();
      this.calls.delete(key);
    }

    closeAll() {
      for (const key of [...this.calls.keys()]) this.closeCall(key);
      this.early.clear();
    }

    async send(content) {
      $('error').textContent = '';
      await api('POST', '/api/v1/sessions/' + encodeURIComponent(this.id) + '/messages', { content });
    }

    async cancel() {
      const r = await api('POST', '/api/v1/sessions/' + encodeURIComponent(this.id) + '/cancel');
      if (!r.cancelled) this.note('No turn was running.');
    }

    async resume() {
      await api('POST', '/api/v1/sessions/' + encodeURIComponent(this.id) + '/resume');
      this.stop();
      view = new SessionView(this.id);
      view.start();
    }
  }

  // ---- wiring --------------------------------------------------------------------------

  function fail(e) {
    if (e && e.status === 401) return;
    $('error').textContent = e && e.message ? e.message : String(e);
  }

  document.addEventListener('DOMContentLoaded', () => {
    $('new-session').addEventListener('click', newSession);
    $('home').addEventListener('click', (ev) => {
      ev.preventDefault();
      location.hash = '';
    });
    $('back').addEventListener('click', (ev) => {
      ev.preventDefault();
      location.hash = '';
    });
    $('compose').addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const box = $('message');
      const content = box.value;
      if (!view || !content.trim()) return;
      $('send').disabled = true;
      try {
        await view.send(content);
        box.value = '';
      } catch (e) {
        fail(e);
      } finally {
        if (view) view.render();
      }
    });
    $('message').addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        $('compose').requestSubmit();
      }
    });
    $('cancel').addEventListener('click', () => {
      if (view) view.cancel().catch(fail);
    });
    $('resume').addEventListener('click', () => {
      if (view) view.resume().catch(fail);
    });
    window.addEventListener('hashchange', route);
    route();
  });
})();
