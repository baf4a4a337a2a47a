/* agent-rewind report: draws a trace or a diff from the JSON embedded in this page.
 *
 * Every string shown comes from a trace, which is untrusted: text goes in through
 * textContent only, never as markup; links are http(s) only; images are data: URLs
 * of raster types only. Step bodies are parsed when a step is first shown, and the
 * step list draws only the rows in view, so thousands of steps stay smooth. */
(function () {
  "use strict";

  var CLIP = "__rewind_report_clip__";
  var IMAGE = "__rewind_report_image__";
  var ROW = 26;
  var KINDS = { llm: 1, tool: 1, memory: 1 };
  var DATA_IMAGE = /^data:image\/(png|jpe?g|gif|webp);base64,[A-Za-z0-9+\/=\s]+$/i;
  var DAMAGED = typeof Symbol === "function" ? Symbol("damaged") : "__rewind_report_damaged__";  // never from JSON
  var SKELETON = { seq: 1, kind: 1, name: 1, fingerprint: 1, ts: 1, duration_ms: 1, ok: 1, live: 1 };

  // -- small helpers ------------------------------------------------------------------
  // Control and bidi-override characters are shown as escapes, never interpreted.
  var HIDDEN = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  function visible(text) {
    return String(text).replace(HIDDEN, function (c) {
      return "\\u" + ("000" + c.charCodeAt(0).toString(16)).slice(-4);
    });
  }
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = visible(text);
    return node;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined || child === false) continue;
      parent.appendChild(typeof child === "string" ? document.createTextNode(visible(child)) : child);
    }
    return parent;
  }
  function readJSON(id, fallback) {
    var node = document.getElementById(id);
    if (!node) return fallback;
    try { return JSON.parse(node.textContent); } catch (e) { return fallback; }
  }
  function fmtMs(ms) {
    if (ms === null || ms === undefined || isNaN(ms)) return "–";
    if (ms < 1) return ms.toFixed(2) + " ms";
    if (ms < 1000) return ms.toFixed(ms < 10 ? 1 : 0) + " ms";
    if (ms < 60000) return (ms / 1000).toFixed(2) + " s";
    return Math.floor(ms / 60000) + " min " + ((ms % 60000) / 1000).toFixed(0) + " s";
  }
  function fmtInt(n) { return n === null || n === undefined ? "?" : Number(n).toLocaleString("en-US"); }
  function fmtCost(c) {
    if (c === null || c === undefined) return "–";
    if (c > 0 && c < 0.00001) return "< $0.00001";
    return c >= 100 ? "$" + c.toFixed(2) : "$" + c.toFixed(c >= 1 ? 3 : 5);
  }
  function fmtBytes(n) {
    if (n >= 1e6) return (n / 1e6).toFixed(1) + " MB";
    if (n >= 1e3) return (n / 1e3).toFixed(1) + " KB";
    return n + " B";
  }
  function kindClass(kind) { return KINDS[kind] ? kind : "other"; }
  function isObj(v) { return v !== null && typeof v === "object" && !Array.isArray(v); }
  function safeHref(url) { return typeof url === "string" && /^https?:\/\//i.test(url) ? url : null; }
  function debounce(fn, ms) {
    var timer = null;
    return function () { clearTimeout(timer); timer = setTimeout(fn, ms); };
  }

  // -- data -----------------------------------------------------------------------------
  var DATA = readJSON("rw-data", null);
  var IMAGES = readJSON("rw-images", []);

  /* A stored line as JSON.parse reads it. Python's json writes a float NaN or infinity as
   * a bare NaN / Infinity / -Infinity, which JSON lacks: a line JSON.parse refuses gets
   * those tokens (outside strings) turned into strings and is parsed again. */
  var PY_CONSTANT = /"(?:[^"\\]|\\.)*"|-?Infinity|NaN/g;
  function parseLine(line) {
    try {
      return JSON.parse(line);
    } catch (e) {
      if (!/NaN|Infinity/.test(line)) throw e;
      var fixed = line.replace(PY_CONSTANT, function (token) { return token.charAt(0) === '"' ? token : '"' + token + '"'; });
      try { return JSON.parse(fixed); } catch (again) { throw e; }
    }
  }

  /* The first key some object of this JSON text names twice, or null. JSON.parse keeps the
   * last one silently; every reader of a trace refuses such a line, so the page says so too. */
  function duplicateKey(text) {
    var stack = [], expectKey = false, i = 0, n = text.length;
    while (i < n) {
      var c = text.charCodeAt(i);
      if (c === 34) {  // a string: skipped whole, checked when it is a key
        var j = i + 1;
        while (j < n) {
          var d = text.charCodeAt(j);
          if (d === 92) j += 2; else if (d === 34) break; else j++;
        }
        if (expectKey) {
          var key;
          try { key = JSON.parse(text.slice(i, j + 1)); } catch (e) { return null; }
          var seen = stack[stack.length - 1];
          if (seen.has(key)) return key;
          seen.add(key);
          expectKey = false;
        }
        i = j + 1;
        continue;
      }
      if (c === 123) { stack.push(new Set()); expectKey = true; }
      else if (c === 91) { stack.push(null); expectKey = false; }
      else if (c === 125 || c === 93) { stack.pop(); expectKey = false; }
      else if (c === 44) { expectKey = stack.length > 0 && stack[stack.length - 1] !== null; }
      i++;
    }
    return null;
  }

  /* The fields before the request of a line damaged past them (the writer puts the request
   * last), as the trace's own reader reads a head; null when there is no intact head. Only
   * the first few places the key appears are tried: a hostile line cannot make this slow. */
  function headOf(line) {
    var at = line.indexOf(',"request":');
    for (var tries = 0; at >= 0 && tries < 8; tries++) {
      try {
        var head = parseLine(line.slice(0, at) + "}");
        if (isObj(head)) return head;
      } catch (e) { /* not the top level: try the next one */ }
      at = line.indexOf(',"request":', at + 1);
    }
    return null;
  }

  /* One trace's step bodies: JSON lines, split once, each parsed when first needed. */
  function BodyStore(id, count) {
    var lines = null, lowered = null, cache = new Map();
    function load() {
      if (lines !== null) return;
      var node = document.getElementById(id);
      var text = node ? node.textContent : "";
      lines = text.length ? text.split("\n") : [];
    }
    this.get = function (i) {
      if (cache.has(i)) return cache.get(i);
      var value = parse(i);
      if (cache.size > 300) cache.clear();
      cache.set(i, value);
      return value;
    };
    /* Step i's body, parsed afresh (what summarizing every step once reads). */
    var parse = this.parse = function (i) {
      load();
      var value = {};
      if (lines.length !== count) {
        value[DAMAGED] = "the report's step data is damaged (" + lines.length + " lines for " + count + " steps)";
      } else {
        try {
          value = parseLine(lines[i]);
          if (value !== null && !isObj(value)) { value = {}; value[DAMAGED] = "this step's stored line is not a JSON object"; }
          var twice = value !== null ? duplicateKey(lines[i]) : null;
          if (twice !== null) {
            value = {};
            value[DAMAGED] = "this step's stored line names the key " + JSON.stringify(twice) +
              " twice (rewind refuses such a line): the trace file is damaged here";
          }
        } catch (e) {
          value = headOf(lines[i]) || {};  // its row is still summarized from what is intact
          value[DAMAGED] = "this step's stored line is not valid JSON (" + e.message + "): the trace file is damaged here";
        }
      }
      return value;
    };
    /* Lower-cased body text for search (JSON escapes of < > & undone). */
    this.text = function (i) {
      load();
      if (lowered === null) lowered = new Array(lines.length);
      var t = lowered[i];
      if (t === undefined) {
        t = (lines[i] || "").replace(/\\u003c/g, "<").replace(/\\u003e/g, ">").replace(/\\u0026/g, "&").toLowerCase();
        lowered[i] = t;
      }
      return t;
    };
  }

  // -- rendering values -----------------------------------------------------------------
  function textOf(value) {
    if (typeof value === "string") return value;
    if (isObj(value) && typeof value[CLIP] === "string") return value[CLIP];
    if (value === null || value === undefined) return "";
    return JSON.stringify(value);
  }
  function textNode(value, cls) {
    var box = el("div", cls || "text");
    if (isObj(value) && typeof value[CLIP] === "string") {
      add(box, value[CLIP], el("span", "clip", " … " + fmtInt(value.omitted) + " more characters not embedded (--inline embeds them)"));
    } else if (isObj(value) && value[IMAGE] !== undefined) {
      add(box, imageNode(value));
    } else if (typeof value === "string" && DATA_IMAGE.test(value)) {
      add(box, imageNode(value));
    } else {
      add(box, typeof value === "string" ? value : JSON.stringify(value, null, 2));
    }
    return box;
  }
  /* An image: a report image reference, a data: URL, or a remote URL (linked, never loaded). */
  function imageNode(source, media) {
    if (isObj(source) && source[IMAGE] !== undefined) {
      var url = IMAGES[source[IMAGE]];
      if (typeof url === "string" && DATA_IMAGE.test(url)) return thumb(url);
      var where = typeof source.blob === "string" ? "; the trace keeps it in " + source.blob : "";
      return el("span", "imgnote", "image " + (source.type || "") + " " + fmtBytes(source.bytes || 0) + " not embedded (too big for this report; --inline embeds it" + where + ")");
    }
    if (typeof source === "string") {
      if (DATA_IMAGE.test(source)) return thumb(source);
      if (media && /^[A-Za-z0-9+\/=\s]+$/.test(source) && /^image\/(png|jpe?g|gif|webp)$/i.test(media)) {
        return thumb("data:" + media + ";base64," + source);
      }
      var href = safeHref(source);
      if (href) {
        var link = el("a", "imgnote", "remote image (not loaded): " + href);
        link.href = href; link.rel = "noopener noreferrer"; link.target = "_blank";
        return link;
      }
    }
    if (isObj(source) && typeof source[CLIP] === "string") return el("span", "imgnote", "image data cut short in this report");
    return el("span", "imgnote", "image");
  }
  /* A thumbnail; a click shows it at full size (browsers refuse to open data: URLs in a tab). */
  function thumb(url) {
    var img = document.createElement("img");
    img.className = "thumb"; img.alt = "image from the trace"; img.src = url;
    img.title = "click to enlarge";
    img.addEventListener("click", function () { img.classList.toggle("big"); });
    return img;
  }

  /* Pretty JSON as coloured text nodes (never markup). Huge values fall back to plain text. */
  function jsonNode(value) {
    var pre = el("pre", "json");
    var size = 0;
    try { size = JSON.stringify(value).length; } catch (e) { size = 0; }
    if (size > 400000) { pre.textContent = visible(JSON.stringify(value, null, 2)); return pre; }
    walk(value, "", pre, null);
    return pre;
  }
  function walk(value, indent, out, key) {
    if (isObj(value) && typeof value[CLIP] === "string") {
      add(out, el("span", "j-str", JSON.stringify(value[CLIP])), el("span", "clip", " … " + fmtInt(value.omitted) + " more characters not embedded"));
      return;
    }
    if (isObj(value) && value[IMAGE] !== undefined) { add(out, imageNode(value)); return; }
    if (typeof value === "string") {
      if (DATA_IMAGE.test(value) && value.length > 100) { add(out, imageNode(value)); return; }
      add(out, el("span", "j-str", JSON.stringify(value)));
      return;
    }
    if (typeof value === "number") { add(out, el("span", "j-num", String(value))); return; }
    if (value === null || typeof value === "boolean") { add(out, el("span", "j-lit", String(value))); return; }
    var inner = indent + "  ";
    if (Array.isArray(value)) {
      if (!value.length) { add(out, "[]"); return; }
      add(out, "[\n");
      for (var i = 0; i < value.length; i++) {
        add(out, inner);
        walk(value[i], inner, out, null);
        add(out, i < value.length - 1 ? ",\n" : "\n");
      }
      add(out, indent + "]");
      return;
    }
    var keys = Object.keys(value);
    if (!keys.length) { add(out, "{}"); return; }
    add(out, "{\n");
    keys.forEach(function (k, n) {
      add(out, inner, el("span", "j-key", JSON.stringify(k)), ": ");
      walk(value[k], inner, out, k);
      add(out, n < keys.length - 1 ? ",\n" : "\n");
    });
    add(out, indent + "}");
  }
  function rawSection(title, value, open) {
    var box = el("details", "raw");
    if (open) box.open = true;
    var summary = el("summary", null, title);
    add(box, summary);
    var drawn = false;
    function draw() { if (!drawn) { drawn = true; add(box, jsonNode(value)); } }
    if (open) draw();
    box.addEventListener("toggle", draw);
    return box;
  }

  // -- conversations ----------------------------------------------------------------------
  /* Messages of the OpenAI (chat and Responses), Anthropic and Gemini shapes, normalized to
   * {role, parts: [{text} | {image, media} | {call: {id, name, args}} | {result: {id, content, error}}]}. */
  function parseArgs(args) {
    if (typeof args === "string") { try { return JSON.parse(args); } catch (e) { return args; } }
    return args;
  }
  function partsOf(content) {
    var parts = [];
    if (content === null || content === undefined) return parts;
    if (typeof content === "string" || (isObj(content) && content[CLIP] !== undefined)) { parts.push({ text: content }); return parts; }
    if (!Array.isArray(content)) { parts.push({ text: content }); return parts; }
    content.forEach(function (p) {
      if (typeof p === "string") { parts.push({ text: p }); return; }
      if (!isObj(p)) { parts.push({ text: p }); return; }
      var type = p.type;
      if (p.text !== undefined && (type === undefined || /text$/.test(type))) parts.push({ text: p.text });
      else if (type === "image_url") parts.push({ image: isObj(p.image_url) ? p.image_url.url : p.image_url });
      else if (type === "input_image") parts.push({ image: p.image_url });
      else if (type === "image" && isObj(p.source)) parts.push({ image: p.source.type === "url" ? p.source.url : p.source.data, media: p.source.media_type });
      else if (type === "tool_use") parts.push({ call: { id: p.id, name: p.name, args: p.input } });
      else if (type === "tool_result") parts.push({ result: { id: p.tool_use_id, content: p.content, error: !!p.is_error } });
      else if (type === "thinking") parts.push({ text: p.thinking, thinking: true });
      else if (p.inline_data || p.inlineData) { var d = p.inline_data || p.inlineData; parts.push({ image: d.data, media: d.mime_type || d.mimeType }); }
      else if (p.function_call || p.functionCall) { var f = p.function_call || p.functionCall; parts.push({ call: { id: f.id || f.name, name: f.name, args: f.args } }); }
      else if (p.function_response || p.functionResponse) { var r = p.function_response || p.functionResponse; parts.push({ result: { id: r.id || r.name, content: r.response } }); }
      else if (isObj(p.toolUse)) parts.push({ call: { id: p.toolUse.toolUseId, name: p.toolUse.name, args: p.toolUse.input } });
      else if (isObj(p.toolResult)) parts.push({ result: { id: p.toolResult.toolUseId, content: p.toolResult.content, error: p.toolResult.status === "error" } });
      else parts.push({ json: p });
    });
    return parts;
  }
  function chatMessage(m) {
    if (!isObj(m)) return { role: "?", parts: [{ text: m }] };
    if (m.type === "function_call") return { role: "assistant", parts: [{ call: { id: m.call_id || m.id, name: m.name, args: parseArgs(m.arguments) } }] };
    if (m.type === "function_call_output") return { role: "tool", parts: [{ result: { id: m.call_id, content: m.output } }] };
    if (m.type === "reasoning") return { role: "assistant", parts: [{ json: m }] };
    var role = m.role || (m.type === "message" ? "assistant" : "?");
    if (role === "model") role = "assistant";
    var parts = partsOf(m.content !== undefined ? m.content : m.parts);
    (Array.isArray(m.tool_calls) ? m.tool_calls : []).forEach(function (c) {
      var fn = isObj(c) && isObj(c.function) ? c.function : {};
      parts.push({ call: { id: c && c.id, name: fn.name, args: parseArgs(fn.arguments) } });
    });
    if (isObj(m.function_call)) parts.push({ call: { id: m.function_call.name, name: m.function_call.name, args: parseArgs(m.function_call.arguments) } });
    if (role === "tool" || role === "function") {
      return { role: "tool", parts: [{ result: { id: m.tool_call_id || m.name, content: m.content, name: m.name } }] };
    }
    return { role: role, parts: parts };
  }
  function requestMessages(req) {
    var out = [];
    if (!isObj(req)) return out;
    var system = req.system !== undefined ? req.system : req.instructions;
    if (system !== undefined && system !== null) out.push({ role: "system", parts: partsOf(system) });
    var si = req.system_instruction || req.systemInstruction || (isObj(req.config) ? req.config.system_instruction : undefined);
    if (si) out.push({ role: "system", parts: partsOf(isObj(si) ? si.parts : si) });
    var list = Array.isArray(req.messages) ? req.messages : Array.isArray(req.input) ? req.input : Array.isArray(req.contents) ? req.contents : null;
    if (list) list.forEach(function (m) { out.push(chatMessage(m)); });
    else if (typeof req.input === "string" || typeof req.prompt === "string" || typeof req.contents === "string") {
      out.push({ role: "user", parts: [{ text: req.input || req.prompt || req.contents }] });
    }
    return out;
  }
  function answerMessages(resp) {
    if (!isObj(resp)) return [];
    if (Array.isArray(resp.choices)) {
      return resp.choices.map(function (c) { return chatMessage(isObj(c) ? (c.message || { role: "assistant", content: c.text }) : c); });
    }
    if (Array.isArray(resp.output)) {
      var parts = [];
      resp.output.forEach(function (item) {
        var m = chatMessage(item);
        parts = parts.concat(m.parts);
      });
      return [{ role: "assistant", parts: parts }];
    }
    if (resp.type === "message" && Array.isArray(resp.content)) return [{ role: "assistant", parts: partsOf(resp.content) }];
    if (Array.isArray(resp.candidates)) {
      return resp.candidates.slice(0, 1).map(function (c) { return chatMessage(isObj(c) ? c.content : c); });
    }
    if (isObj(resp.message)) return [chatMessage(resp.message)];  // Cohere v2, Ollama-style
    if (isObj(resp.output) && isObj(resp.output.message)) return [chatMessage(resp.output.message)];  // Bedrock Converse
    if (typeof resp.content === "string") return [{ role: "assistant", parts: [{ text: resp.content }] }];
    return [];
  }
  function conversation(req, resp, row) {
    var messages = requestMessages(req);
    var answers = answerMessages(resp);
    if (!messages.length && !answers.length) return null;
    var results = new Map();
    messages.forEach(function (m) { m.parts.forEach(function (p) { if (p.result && p.result.id !== undefined) results.set(String(p.result.id), p.result); }); });
    var used = new Set();
    var box = el("div", "conv");
    function drawMessage(m, answer) {
      var node = el("div", "msg " + (["system", "user", "assistant", "tool"].indexOf(m.role) >= 0 ? m.role : "user") + (answer ? " answer" : ""));
      add(node, el("div", "role", answer ? "answer (" + m.role + ")" : m.role));
      var shown = 0;
      m.parts.forEach(function (p) {
        if (p.result) {
          if (used.has(p.result)) return;
          add(node, resultNode(p.result, true));
        } else if (p.call) {
          var call = el("div", "call");
          add(call, el("span", "fn", "→ " + (p.call.name || "call") + "(" + ")"), el("span", "j-lit", p.call.id ? "  " + p.call.id : ""));
          add(call, textNode(typeof p.call.args === "string" ? p.call.args : JSON.stringify(p.call.args, null, 2)));
          var result = p.call.id !== undefined ? results.get(String(p.call.id)) : undefined;
          if (result) { used.add(result); add(call, resultNode(result, false)); }
          else add(call, el("div", "pending", answer ? "result: in a later step (the agent runs the tool next)" : "no result for this call in the conversation"));
          add(node, call);
        } else if (p.image !== undefined) {
          add(node, imageNode(p.image, p.media));
        } else if (p.json !== undefined) {
          add(node, jsonNode(p.json));
        } else {
          if (textOf(p.text) === "") return;
          add(node, textNode(p.text, p.thinking ? "text clip" : "text"));
        }
        shown++;
      });
      if (answer && !shown) add(node, el("div", "clip", "(no content)"));
      if (shown || answer) add(box, node);
    }
    messages.forEach(function (m) { drawMessage(m, false); });
    answers.forEach(function (m) { drawMessage(m, true); });
    return box;
  }
  function resultNode(result, standalone) {
    var node = el("div", standalone ? "call result" : "result");
    add(node, el("div", "label", (result.error ? "✗ error result" : "result") + (result.id !== undefined ? " for " + result.id : "")));
    var content = result.content;
    if (Array.isArray(content)) {
      partsOf(content).forEach(function (p) {
        if (p.image !== undefined) add(node, imageNode(p.image, p.media)); else add(node, textNode(p.text !== undefined ? p.text : p.json));
      });
    } else add(node, textNode(content));
    return node;
  }

  // -- step detail --------------------------------------------------------------------------
  function errorBox(error) {
    var box = el("div", "rw-error");
    if (isObj(error)) {
      add(box, el("div", "type", error.qualname || error.type || "error"), textNode(error.message !== undefined ? error.message : ""));
    } else add(box, textNode(error));
    return box;
  }
  function fact(dl, label, value) {
    if (value === undefined || value === null || value === "") return;
    add(dl, el("dt", null, label), typeof value === "string" ? el("dd", null, value) : add(el("dd"), value));
  }
  function stepDetail(section, store, i) {
    var row = section.steps[i];
    var box = el("div", "rw-step");
    box.dataset.step = String(row.seq);
    var title = el("h2", null, "#" + row.seq + " " + row.kind + " " + row.name + "  ");
    add(title, el("span", row.ok ? "st-ok" : "st-err", row.ok ? "ok" : "ERROR"));
    add(box, title);
    var dl = el("dl", "rw-facts");
    var when = section.t0 * 1000 + row.t;
    var stamp = section.t0 && isFinite(when) && Math.abs(when) < 8.64e15 ? " (" + new Date(when).toISOString() + ")" : "";
    fact(dl, "started", "+" + fmtMs(row.t) + " from the first step" + stamp);
    fact(dl, "duration", fmtMs(row.d));
    fact(dl, "model", row.model);
    if (row.kind === "llm") {
      fact(dl, "tokens", row.tin !== undefined ? fmtInt(row.tin) + " in · " + fmtInt(row.tout) + " out" : "unknown (the recording carries no usage)");
      fact(dl, "est. cost", row.cost !== undefined ? fmtCost(row.cost) : row.live ? (row.tin !== undefined ? "unpriced model" : "–") : "not counted (served from the source trace)");
    }
    var hybridOf = section.header && isObj(section.header.hybrid_of);
    fact(dl, "origin", row.live ? (hybridOf ? "ran live in this hybrid replay" : "live call") : hybridOf ? "served from the recording by identity (↺)" : "served from the source trace when this fork was recorded (↺)");
    add(box, dl);
    var flags = row.flags || [];
    if (flags.indexOf("fork") >= 0) add(box, el("div", "rw-warn", "Fork point: the first step this fork ran live; earlier steps were served from " + ((section.header && section.header.forked_from && textOf(section.header.forked_from.path)) || "the source trace") + "."));
    if (flags.indexOf("stream-cut") >= 0) add(box, el("div", "rw-warn", "Truncated stream: the consumer stopped reading before the stream ended (or it failed mid-way); only the chunks read were recorded."));
    if (flags.indexOf("clipped") >= 0) add(box, el("div", "rw-warn", "Long strings or big images of this step are cut in this report (marked below). Write the report with --inline to embed them."));
    var body = store.get(i);
    if (body === null) {
      add(box, el("div", "rw-warn", "This step's request and response are not embedded: the report reached its size budget. Write it with --inline (or a larger --max-size) to include every step."));
      return box;
    }
    if (body[DAMAGED]) { add(box, el("div", "rw-warn", body[DAMAGED])); return box; }
    if (!row.ok) add(box, errorBox(body.error));
    var stream = body.stream;
    if (row.kind === "llm") {
      var conv = conversation(body.request, body.response, row);
      if (conv) {
        add(box, el("h3", null, "Conversation"), conv);
        if (row.streamed !== undefined && row.streamed !== null) {
          add(conv, add(el("div", "msg assistant answer"), el("div", "role", "streamed text (assembled from the recorded chunks)"), textNode(row.streamed)));
        }
      }
    } else {
      add(box, el("h3", null, row.kind === "memory" ? "Read" : "Arguments"), jsonNode(body.request));
      if (row.ok) add(box, el("h3", null, "Result"), jsonNode(stream !== undefined && body.response === null ? { stream: stream } : body.response));
    }
    add(box, el("h3", null, "Recorded payloads"));
    add(box, rawSection("request", body.request, false));
    if ("response" in body) add(box, rawSection("response", body.response, false));
    if ("error" in body) add(box, rawSection("error", body.error, !row.ok));
    if (stream !== undefined) add(box, rawSection("stream (" + (Array.isArray(stream) ? stream.length : isObj(stream) && Array.isArray(stream.chunks) ? stream.chunks.length : "?") + " chunks)", stream, false));
    Object.keys(body).forEach(function (k) {
      if (SKELETON[k] || k === "request" || k === "response" || k === "error" || k === "stream") return;
      add(box, rawSection(k, body[k], false));
    });
    var skeleton = {};
    Object.keys(SKELETON).forEach(function (k) { if (k in body) skeleton[k] = body[k]; });
    add(box, rawSection("step record", skeleton, false));
    return box;
  }

  // -- virtual list ------------------------------------------------------------------------
  function VirtualList(container, drawRow, onSelect) {
    var spacer = el("div", "rw-spacer");
    container.appendChild(spacer);
    container.tabIndex = 0;
    var items = [], selected = -1, pending = false;
    function draw() {
      pending = false;
      var top = container.scrollTop, height = container.clientHeight || 600;
      var first = Math.max(0, Math.floor(top / ROW) - 8);
      var last = Math.min(items.length, Math.ceil((top + height) / ROW) + 8);
      var rows = [];
      for (var k = first; k < last; k++) {
        var node = drawRow(items[k], k === selected);
        node.style.top = (k * ROW) + "px";
        node.dataset.pos = String(k);
        rows.push(node);
      }
      spacer.replaceChildren.apply(spacer, rows);
    }
    function schedule() { if (!pending) { pending = true; requestAnimationFrame(draw); } }
    container.addEventListener("scroll", schedule);
    window.addEventListener("resize", schedule);
    spacer.addEventListener("click", function (ev) {
      var node = ev.target.closest(".rw-row");
      if (!node) return;
      container.focus({ preventScroll: true });  // so the arrow keys move from here
      select(Number(node.dataset.pos), false);
    });
    container.addEventListener("keydown", function (ev) {
      var step = { ArrowDown: 1, ArrowUp: -1, PageDown: 20, PageUp: -20, j: 1, k: -1 }[ev.key];
      if (ev.key === "Home") step = -items.length;
      if (ev.key === "End") step = items.length;
      if (step === undefined || !items.length) return;
      ev.preventDefault();
      select(Math.max(0, Math.min(items.length - 1, (selected < 0 ? 0 : selected) + step)), true);
    });
    function select(pos, scroll) {
      if (pos < 0 || pos >= items.length) return;
      selected = pos;
      if (scroll) reveal(pos);
      draw();
      onSelect(items[pos]);
    }
    function reveal(pos) {
      var top = pos * ROW, height = container.clientHeight || 600;
      if (top < container.scrollTop || top + ROW > container.scrollTop + height) container.scrollTop = Math.max(0, top - height / 3);
    }
    return {
      setItems: function (list, keep) {
        var current = selected >= 0 ? items[selected] : undefined;
        items = list;
        spacer.style.height = (items.length * ROW) + "px";
        selected = keep !== undefined ? items.indexOf(keep) : current !== undefined ? items.indexOf(current) : -1;
        draw();
      },
      selectItem: function (item, scroll) { var pos = items.indexOf(item); if (pos >= 0) select(pos, scroll !== false); },
      redraw: draw,
      size: function () { return items.length; }
    };
  }

  // -- timeline ------------------------------------------------------------------------------
  function Timeline(section, onPick) {
    var steps = section.steps;
    var wrap = el("div", "rw-timeline");
    var canvas = document.createElement("canvas");
    var tip = el("div", "rw-tip");
    var legend = el("div", "rw-legend");
    ["llm", "tool", "memory"].forEach(function (k) {
      var sw = el("i"); sw.style.background = getComputedStyle(document.documentElement).getPropertyValue("--" + k) || "#888";
      add(legend, add(el("span"), sw, k));
    });
    var swErr = el("i"); swErr.style.background = "#dc2626";
    add(legend, add(el("span"), swErr, "error"), el("span", null, "wheel: zoom · drag: pan · double-click: reset"));
    add(wrap, legend, canvas, tip);
    // Start/end of every step; traces without timestamps are laid end to end.
    var start = new Float64Array(steps.length), end = new Float64Array(steps.length);
    var timed = steps.some(function (s) { return s.t > 0; });
    var clock = 0;
    steps.forEach(function (s, i) {
      start[i] = timed ? s.t : clock;
      end[i] = start[i] + Math.max(0, s.d || 0);
      clock = end[i];
    });
    var total = 0;
    for (var i = 0; i < steps.length; i++) total = Math.max(total, end[i]);
    if (total <= 0) total = 1;
    // Concurrency lanes: each step takes the first lane free at its start. Start times
    // are recorded to the millisecond, so overlaps under 1 ms are rounding, not parallelism.
    var order = steps.map(function (_, n) { return n; }).sort(function (a, b) { return start[a] - start[b] || a - b; });
    var laneEnd = [], lane = new Int32Array(steps.length);
    var slack = timed ? 1 : 0;
    order.forEach(function (n) {
      var l = 0;
      while (l < laneEnd.length && laneEnd[l] > start[n] + slack) l++;
      laneEnd[l] = Math.max(end[n], start[n] + 1e-9);
      lane[n] = l;
    });
    var lanes = Math.max(1, laneEnd.length);
    var laneH = lanes <= 6 ? 16 : Math.max(3, Math.min(16, Math.floor(150 / lanes)));
    var axisH = 18, height = Math.min(200, lanes * laneH + axisH + 6);
    var view = [0, total], selected = -1, visibleSet = null;
    var colors = {};
    ["llm", "tool", "memory", "other", "err"].forEach(function (k) {
      colors[k] = (getComputedStyle(document.documentElement).getPropertyValue("--" + k) || "#888").trim() || "#888";
    });
    function x(t, width) { return (t - view[0]) / (view[1] - view[0]) * width; }
    function draw() {
      var width = wrap.clientWidth || 800, ratio = window.devicePixelRatio || 1;
      canvas.width = Math.floor(width * ratio); canvas.height = Math.floor(height * ratio);
      canvas.style.height = height + "px";
      var g = canvas.getContext("2d");
      g.setTransform(ratio, 0, 0, ratio, 0, 0);
      g.fillStyle = "#fff"; g.fillRect(0, 0, width, height);
      // axis
      g.fillStyle = "#656d76"; g.font = "11px system-ui, sans-serif"; g.strokeStyle = "#eaeef2";
      var span = view[1] - view[0], stepMs = Math.pow(10, Math.floor(Math.log10(span / 6 || 1)));
      if (span / stepMs > 12) stepMs *= 5; else if (span / stepMs > 6) stepMs *= 2;
      for (var t = Math.ceil(view[0] / stepMs) * stepMs; t <= view[1]; t += stepMs) {
        var px = x(t, width);
        g.beginPath(); g.moveTo(px + 0.5, axisH); g.lineTo(px + 0.5, height); g.stroke();
        g.fillText(fmtMs(t), px + 3, 12);
      }
      for (var n = 0; n < steps.length; n++) {
        if (end[n] < view[0] || start[n] > view[1]) continue;
        var s = steps[n];
        var x0 = x(start[n], width), x1 = x(end[n], width);
        var y = axisH + lane[n] * laneH;
        g.globalAlpha = visibleSet && !visibleSet.has(n) ? 0.18 : 1;
        g.fillStyle = colors[kindClass(s.kind)];
        g.fillRect(x0, y + 1, Math.max(1.5, x1 - x0), laneH - 2);
        if (!s.ok) {
          g.fillStyle = colors.err;
          g.fillRect(x0, y + 1, Math.max(3, x1 - x0), Math.max(2, laneH - 2));
        }
        if ((s.flags || []).indexOf("stream-cut") >= 0) {
          g.fillStyle = "#d4a72c"; g.fillRect(Math.max(x0, x1 - 3), y + 1, 3, laneH - 2);
        }
      }
      g.globalAlpha = 1;
      steps.forEach(function (s, n) {
        if ((s.flags || []).indexOf("fork") >= 0) {
          var fx = x(start[n], width);
          g.strokeStyle = "#0969da"; g.setLineDash([4, 3]); g.beginPath(); g.moveTo(fx, axisH); g.lineTo(fx, height); g.stroke(); g.setLineDash([]);
          g.fillStyle = "#0969da"; g.fillText("fork", fx + 3, height - 4);
        }
      });
      if (selected >= 0) {
        var sx0 = x(start[selected], width), sx1 = x(end[selected], width), sy = axisH + lane[selected] * laneH;
        g.strokeStyle = "#111"; g.lineWidth = 2; g.strokeRect(sx0 - 1, sy, Math.max(3, sx1 - sx0) + 2, laneH); g.lineWidth = 1;
      }
      if (section.torn_tail) { g.fillStyle = colors.err; g.fillText("✂ torn", x(total, width) - 40, height - 4); }
    }
    function hit(ev) {
      var rect = canvas.getBoundingClientRect(), width = rect.width;
      var mx = ev.clientX - rect.left, my = ev.clientY - rect.top;
      var l = Math.floor((my - axisH) / laneH), best = -1, bestGap = 4;
      for (var n = 0; n < steps.length; n++) {
        if (lane[n] !== l) continue;
        var x0 = x(start[n], width), x1 = Math.max(x0 + 1.5, x(end[n], width));
        var gap = mx < x0 ? x0 - mx : mx > x1 ? mx - x1 : 0;
        if (gap < bestGap || (gap === 0 && bestGap === 0 && x1 - x0 < 1e9)) { best = n; bestGap = gap; }
      }
      return best;
    }
    var drag = null;
    canvas.addEventListener("mousemove", function (ev) {
      if (drag) {
        var width = canvas.getBoundingClientRect().width, dt = (drag.x - ev.clientX) / width * (drag.view[1] - drag.view[0]);
        view = [drag.view[0] + dt, drag.view[1] + dt]; drag.moved = true; draw(); return;
      }
      var n = hit(ev);
      if (n < 0) { tip.style.display = "none"; return; }
      var s = steps[n];
      tip.textContent = visible("#" + s.seq + " " + s.kind + " " + s.name + " · " + fmtMs(s.d) + (s.ok ? "" : " · ERROR") + (s.model ? " · " + s.model : ""));
      tip.style.display = "block";
      var rect = wrap.getBoundingClientRect();
      tip.style.left = Math.min(ev.clientX - rect.left + 12, rect.width - 220) + "px";
      tip.style.top = (ev.clientY - rect.top + 12) + "px";
    });
    canvas.addEventListener("mouseleave", function () { tip.style.display = "none"; drag = null; });
    canvas.addEventListener("mousedown", function (ev) { drag = { x: ev.clientX, view: view.slice(), moved: false }; });
    canvas.addEventListener("mouseup", function (ev) {
      var moved = drag && drag.moved; drag = null;
      if (moved) return;
      var n = hit(ev);
      if (n >= 0) onPick(n);
    });
    canvas.addEventListener("dblclick", function () { view = [0, total]; draw(); });
    canvas.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      var rect = canvas.getBoundingClientRect(), at = view[0] + (ev.clientX - rect.left) / rect.width * (view[1] - view[0]);
      var factor = ev.deltaY > 0 ? 1.25 : 0.8, lo = at - (at - view[0]) * factor, hi = at + (view[1] - at) * factor;
      if (hi - lo < 0.05) return;
      view = [Math.max(-total * 0.05, lo), Math.min(total * 1.05, hi)];
      draw();
    }, { passive: false });
    window.addEventListener("resize", draw);
    return {
      node: wrap,
      draw: draw,
      select: function (n) {
        selected = n;
        if (n >= 0 && (end[n] < view[0] || start[n] > view[1])) {
          var span = view[1] - view[0]; view = [start[n] - span / 2, start[n] + span / 2];
        }
        draw();
      },
      filter: function (set) { visibleSet = set; draw(); },
      lanes: lanes
    };
  }

  // -- the trace view -----------------------------------------------------------------------------
  function chip(label, value, cls) { return add(el("span", "rw-chip" + (cls ? " " + cls : "")), label + " ", el("b", null, value)); }
  function traceHead(section, titlePrefix) {
    var head = el("header", "rw-head");
    var totals = section.totals;
    add(head, el("h1", "rw-title", (titlePrefix || "") + section.label));
    var h = section.header || {};
    add(head, el("div", "rw-sub", [
      totals.steps + " steps",
      h.created ? "recorded " + textOf(h.created) : null,
      h.rewind_version ? "rewind " + textOf(h.rewind_version) : null,
      "format v" + section.version
    ].filter(Boolean).join(" · ")));
    var chips = el("div", "rw-chips");
    var kinds = Object.keys(totals.kinds).map(function (k) { return k + " " + totals.kinds[k]; }).join(" · ");
    add(chips, chip("steps", totals.steps + (kinds ? " (" + kinds + ")" : "")));
    add(chips, chip("errors", String(totals.errors), totals.errors ? "err" : ""));
    add(chips, chip("wall time", fmtMs(totals.wall_ms)));
    add(chips, chip("live call time", fmtMs(totals.live_ms)));
    var unknown = totals.calls_without_usage ? " (+ " + totals.calls_without_usage + " calls without usage)" : "";
    add(chips, chip("tokens", fmtInt(totals.input_tokens) + " in · " + fmtInt(totals.output_tokens) + " out" + unknown));
    var costNote = totals.unpriced_models.length ? " (unpriced: " + totals.unpriced_models.join(", ") + ")" : "";
    add(chips, chip("est. cost", fmtCost(totals.cost) + costNote));
    if (totals.replayed) add(chips, chip("served from source", "↺ " + totals.replayed));
    add(head, chips);
    var metaText = [];
    if (isObj(h.meta) && Object.keys(h.meta).length) {
      Object.keys(h.meta).forEach(function (k) { metaText.push(k + "=" + textOf(h.meta[k])); });
    }
    if (metaText.length) add(head, el("div", "rw-meta", "meta: " + metaText.join(", ")));
    if (totals.models.length) {
      var byModel = el("details", "rw-models");
      add(byModel, el("summary", null, "tokens & estimated cost by model (list prices checked " + totals.prices_checked + ")"));
      var table = el("table", "rw-tokens");
      var headRow = el("tr");
      ["model", "calls", "input", "output", "est. cost"].forEach(function (h) { add(headRow, el("th", null, h)); });
      add(table, headRow);
      totals.models.forEach(function (m) {
        var tr = el("tr");
        var unknown = m.without_usage ? " (+ " + m.without_usage + " without usage)" : "";
        add(tr, el("td", null, m.model), el("td", "n", String(m.calls) + unknown), el("td", "n", fmtInt(m.input_tokens)),
          el("td", "n", fmtInt(m.output_tokens)), el("td", "n", m.cost === null ? "unpriced" : fmtCost(m.cost)));
        add(table, tr);
      });
      add(byModel, table);
      if (totals.replayed_llm_calls) add(byModel, el("div", "rw-sub", totals.replayed_llm_calls + " llm steps served from the source trace are not counted"));
      add(head, byModel);
    }
    var notes = el("ul", "rw-notes");
    if (isObj(h.forked_from)) {
      add(notes, el("li", null, "forked from " + textOf(h.forked_from.path) + " at step " + textOf(h.forked_from.at) + ": earlier steps were served from it (↺), later ones ran live"));
    }
    (section.notes || []).forEach(function (n) { add(notes, el("li", null, n)); });
    if (notes.childNodes.length) add(head, notes);
    head.title = "Costs are estimates from list prices checked " + totals.prices_checked + "; tokens are what the provider reported.";
    return head;
  }
  function globalNotes(head) {
    var left = DATA.left_out || {};
    var notes = [];
    if (left.clipped_steps) notes.push(left.clipped_steps + " steps have long strings or big images cut in this report (marked ✂); --inline embeds them");
    if (left.omitted_steps) notes.push(left.omitted_steps + " steps are listed without their bodies: the report reached its size budget; --inline or --max-size includes them");
    if (!notes.length) return;
    var list = el("ul", "rw-notes");
    notes.forEach(function (n) { add(list, el("li", null, n)); });
    add(head, list);
  }

  function stepRow(section) {
    return function (i, isSel) {
      var s = section.steps[i];
      var row = el("div", "rw-row" + (s.ok ? "" : " err") + (isSel ? " sel" : ""));
      row.dataset.step = String(s.seq);
      add(row, el("span", "seq", "#" + s.seq), el("span", "kind " + kindClass(s.kind), s.kind), el("span", "name", s.name));
      add(row, el("span", s.ok ? "st-ok" : "st-err", s.ok ? "✓" : "✗"), el("span", "dur", fmtMs(s.d)));
      var flags = s.flags || [];
      if (!s.live) add(row, el("span", "mark rep", "↺"));
      if (flags.indexOf("fork") >= 0) add(row, el("span", "mark fork", "fork"));
      if (flags.indexOf("live") >= 0) add(row, el("span", "mark live", "live"));
      if (flags.indexOf("stream-cut") >= 0) add(row, el("span", "mark cut", "stream cut"));
      if (flags.indexOf("clipped") >= 0 || flags.indexOf("omitted") >= 0) add(row, el("span", "mark cut", "✂"));
      add(row, el("span", "sum", (s.model ? "[" + s.model + "] " : "") + (s.error ? "✗ " + s.error : s.summary)));
      return row;
    };
  }

  function filterBar(options, onChange) {
    var bar = el("div", "rw-filters");
    var search = el("input"); search.type = "search"; search.id = "rw-search"; search.placeholder = "search (press /): name, model, any text…";
    add(bar, search);
    var selects = {};
    options.selects.forEach(function (spec) {
      var select = el("select"); select.id = spec.id; select.title = spec.title;
      spec.values.forEach(function (v) { var o = el("option", null, v[1]); o.value = v[0]; add(select, o); });
      selects[spec.key] = select;
      add(bar, select);
      select.addEventListener("change", onChange);
    });
    var checks = {};
    options.checks.forEach(function (spec) {
      var label = el("label"); var box = el("input"); box.type = "checkbox"; box.id = spec.id; box.checked = !!spec.checked;
      add(label, box, " " + spec.label); add(bar, label);
      checks[spec.key] = box;
      box.addEventListener("change", onChange);
    });
    var count = el("span", "rw-count"); count.id = "rw-count";
    add(bar, count);
    search.addEventListener("input", debounce(onChange, 120));
    return { node: bar, search: search, selects: selects, checks: checks, count: count };
  }

  function traceView(app) {
    var section = DATA.trace;
    var store = new BodyStore("rw-bodies-a", section.columns.seq.length);
    rewindSummaries.complete(section, store.parse);
    var head = traceHead(section);
    globalNotes(head);
    add(app, head);
    var detail = el("div", "rw-detail"); detail.id = "rw-detail";
    add(detail, el("div", "rw-empty", section.steps.length ? "Select a step (click, or use ↑/↓ in the list) to see its request and response." : "This trace has no steps."));
    var timeline = null, list;
    function show(i) {
      detail.replaceChildren(stepDetail(section, store, i));
      detail.scrollTop = 0;
      if (timeline) timeline.select(i);
      remember("step-" + section.steps[i].seq);
    }
    if (section.steps.length) {
      timeline = Timeline(section, function (i) { list.selectItem(i, true); });
      add(app, timeline.node);
    }
    var names = {};
    section.steps.forEach(function (s) { names[s.name] = (names[s.name] || 0) + 1; });
    var kinds = Object.keys(section.totals.kinds);
    var bar = filterBar({
      selects: [
        { key: "kind", id: "rw-kind", title: "kind", values: [["", "all kinds"]].concat(kinds.map(function (k) { return [k, k]; })) },
        { key: "name", id: "rw-name", title: "call name", values: [["", "all names"]].concat(Object.keys(names).sort().map(function (n) { return [n, n + " (" + names[n] + ")"]; })) }
      ],
      checks: [{ key: "errors", id: "rw-errors", label: "errors only" }]
    }, apply);
    var pane = el("div", "rw-listpane");
    var listNode = el("div", "rw-list"); listNode.id = "rw-list";
    add(pane, bar.node, listNode);
    var main = el("div", "rw-main");
    add(main, pane, detail);
    add(app, main);
    list = VirtualList(listNode, stepRow(section), show);
    function apply() {
      var q = bar.search.value.trim().toLowerCase(), kind = bar.selects.kind.value, name = bar.selects.name.value;
      var errors = bar.checks.errors.checked;
      var out = [];
      for (var i = 0; i < section.steps.length; i++) {
        var s = section.steps[i];
        if (kind && s.kind !== kind) continue;
        if (name && s.name !== name) continue;
        if (errors && s.ok) continue;
        if (q) {
          var head = ("#" + s.seq + " " + s.kind + " " + s.name + " " + (s.model || "") + " " + (s.summary || "") + " " + (s.error || "")).toLowerCase();
          if (head.indexOf(q) < 0 && store.text(i).indexOf(q) < 0) continue;
        }
        out.push(i);
      }
      list.setItems(out);
      bar.count.textContent = out.length === section.steps.length ? section.steps.length + " steps" : out.length + " of " + section.steps.length + " steps";
      if (timeline) timeline.filter(out.length === section.steps.length ? null : new Set(out));
    }
    apply();
    if (timeline) timeline.draw();
    // A link to the page with #step-12 opens step 12 (say "see #step-12" in a bug report).
    var wanted = recalled("step-");
    if (wanted !== null) {
      for (var n = 0; n < section.steps.length; n++) if (section.steps[n].seq === wanted) { list.selectItem(n, true); break; }
    }
    return { select: function (i) { list.selectItem(i, true); } };
  }

  /* The selection lives in the page's #fragment, so a link can point at one step. */
  function remember(fragment) {
    try { history.replaceState(null, "", "#" + fragment); } catch (e) { /* some file:// setups refuse */ }
  }
  function recalled(prefix) {
    var hash = (location.hash || "").slice(1);
    if (hash.indexOf(prefix) !== 0) return null;
    var n = Number(hash.slice(prefix.length));
    return Number.isInteger(n) && n >= 0 ? n : null;
  }

  // -- the diff view -------------------------------------------------------------------------------
  var OP_SYMBOL = { equal: "=", changed: "~", deleted: "−", inserted: "+" };
  function sbsTable(rows, title) {
    var table = el("table", "sbs");
    var head = el("tr");
    add(head, el("th", null, title + " — run A"), el("th", null, title + " — run B"));
    add(table, head);
    rows.forEach(function (r) {
      var tr;
      if (r[0] === "…") {
        tr = el("tr", "d-skip");
        var td = el("td", null, "… " + r[1] + " equal lines …"); td.colSpan = 2;
        add(tr, td);
      } else {
        tr = el("tr", { "=": "d-eq", "~": "d-chg", "-": "d-del", "+": "d-ins" }[r[0]]);
        add(tr, el("td", "l", r[1] === null ? "" : r[1]), el("td", "r", r[2] === null ? "" : r[2]));
      }
      add(table, tr);
    });
    return table;
  }
  function diffView(app) {
    var A = DATA.a, B = DATA.b, rows = DATA.rows;
    var storeA = new BodyStore("rw-bodies-a", A.columns.seq.length), storeB = new BodyStore("rw-bodies-b", B.columns.seq.length);
    rewindSummaries.complete(A, storeA.parse);
    rewindSummaries.complete(B, storeB.parse);
    var head = el("header", "rw-head");
    add(head, el("h1", "rw-title", "rewind diff"));
    add(head, el("div", "rw-sub", "A: " + A.label + " (" + A.steps.length + " steps)"), el("div", "rw-sub", "B: " + B.label + " (" + B.steps.length + " steps)"));
    var chips = el("div", "rw-chips");
    ["equal", "changed", "deleted", "inserted"].forEach(function (op) { add(chips, chip(op, String(DATA.counts[op]), op !== "equal" && DATA.counts[op] ? "err" : "")); });
    add(chips, chip("compared", DATA.exact ? "byte for byte" : "ignoring per-run ids, timestamps and usage"));
    add(chips, chip("est. cost", "A " + fmtCost(A.totals.cost) + " · B " + fmtCost(B.totals.cost)));
    add(head, chips);
    var notes = el("ul", "rw-notes");
    (DATA.notes || []).forEach(function (n) { add(notes, el("li", null, n)); });
    if (notes.childNodes.length) add(head, notes);
    globalNotes(head);
    var banner = el("div", "rw-divergence"); banner.id = "rw-first-divergence";
    add(head, banner);
    add(app, head);

    function side(row) { return row.a !== null ? A.steps[row.a] : B.steps[row.b]; }
    function drawRow(n, isSel) {
      var r = rows[n], s = side(r);
      var node = el("div", "rw-row op-" + r.op + (n === DATA.first ? " first-divergence" : "") + (isSel ? " sel" : ""));
      node.dataset.row = String(n);
      var sa = r.a !== null ? "#" + A.steps[r.a].seq : "·", sb = r.b !== null ? "#" + B.steps[r.b].seq : "·";
      add(node, el("span", "op", OP_SYMBOL[r.op]), el("span", "sides", sa + " ⇄ " + sb), el("span", "kind " + kindClass(s.kind), s.kind), el("span", "name", s.name));
      var what = r.op === "changed" ? r.changes.join(" & ") + " changed (" + Math.round(r.sim * 100) + "% similar)" : r.op === "deleted" ? "only in A" : r.op === "inserted" ? "only in B" : "same";
      add(node, el("span", "sum", what));
      if (n === DATA.first) add(node, el("span", "mark first", "first divergence"));
      return node;
    }
    var detail = el("div", "rw-detail"); detail.id = "rw-detail";
    var tab = "diff";
    function show(n) {
      var r = rows[n], s = side(r);
      var box = el("div", "rw-diffrow");
      box.dataset.row = String(n);
      add(box, el("h2", null, OP_SYMBOL[r.op] + " " + s.kind + " " + s.name + (n === DATA.first ? "  — first divergence" : "")));
      add(box, el("div", null, r.explain));
      var tabs = el("div", "rw-tabs"), body = el("div");
      var choices = [];
      if (r.op === "changed") choices.push(["diff", "side by side"]);
      if (r.a !== null) choices.push(["a", "step in A (#" + A.steps[r.a].seq + ")"]);
      if (r.b !== null) choices.push(["b", "step in B (#" + B.steps[r.b].seq + ")"]);
      var current = choices.some(function (c) { return c[0] === tab; }) ? tab : choices[0][0];
      function open(which) {
        current = which; tab = which;
        Array.prototype.forEach.call(tabs.children, function (b) { b.className = b.dataset.tab === which ? "on" : ""; });
        if (which === "a") body.replaceChildren(stepDetail(A, storeA, r.a));
        else if (which === "b") body.replaceChildren(stepDetail(B, storeB, r.b));
        else {
          var parts = el("div");
          if (r.request) add(parts, el("h3", null, "Request" + (r.changes.indexOf("request") >= 0 ? "" : " (unchanged)")), sbsTable(r.request, "request"));
          if (r.outcome) add(parts, el("h3", null, "Outcome"), sbsTable(r.outcome, "outcome"));
          if (r.side_by_side_omitted) add(parts, el("div", "rw-warn", "Side-by-side diffs are embedded for the first changed rows only; open the steps of A and B to compare this one."));
          body.replaceChildren(parts);
        }
      }
      choices.forEach(function (c) {
        var b = el("button", null, c[1]); b.type = "button"; b.dataset.tab = c[0];
        b.addEventListener("click", function () { open(c[0]); });
        add(tabs, b);
      });
      add(box, tabs, body);
      open(current);
      detail.replaceChildren(box);
      detail.scrollTop = 0;
      remember("row-" + n);
    }
    var bar = filterBar({
      selects: [{ key: "op", id: "rw-op", title: "row kind", values: [["", "all rows"], ["changed", "changed"], ["deleted", "only in A"], ["inserted", "only in B"], ["equal", "equal"]] }],
      checks: [{ key: "diff", id: "rw-diff-only", label: "differences only" }]
    }, apply);
    var pane = el("div", "rw-listpane");
    var listNode = el("div", "rw-list"); listNode.id = "rw-list";
    add(pane, bar.node, listNode);
    var main = el("div", "rw-main");
    add(main, pane, detail);
    add(app, main);
    var list = VirtualList(listNode, drawRow, show);
    function apply() {
      var q = bar.search.value.trim().toLowerCase(), op = bar.selects.op.value, only = bar.checks.diff.checked;
      var out = [];
      rows.forEach(function (r, n) {
        if (op && r.op !== op) return;
        if (only && r.op === "equal") return;
        if (q) {
          var s = side(r);
          var text = (s.kind + " " + s.name + " " + r.op + " " + r.explain + " " + (s.summary || "")).toLowerCase();
          var hit = text.indexOf(q) >= 0 || (r.a !== null && storeA.text(r.a).indexOf(q) >= 0) || (r.b !== null && storeB.text(r.b).indexOf(q) >= 0);
          if (!hit) return;
        }
        out.push(n);
      });
      list.setItems(out);
      bar.count.textContent = out.length === rows.length ? rows.length + " rows" : out.length + " of " + rows.length + " rows";
    }
    apply();
    // A link to the page with #row-7 opens row 7 instead of the first divergence
    // (read before selecting anything rewrites the fragment).
    var wanted = recalled("row-");
    if (DATA.first === null || DATA.first === undefined) {
      add(banner, "No divergence: " + DATA.summary + ", same requests and outcomes.");
      banner.className = "rw-chip";
      if (rows.length) list.selectItem(0, true);
      else add(detail, el("div", "rw-empty", "Both runs are empty."));
    } else {
      var first = rows[DATA.first], fs = side(first);
      var where = first.op === "inserted" ? "step #" + B.steps[first.b].seq + " of B" : first.op === "deleted" ? "step #" + A.steps[first.a].seq + " of A" :
        "step #" + A.steps[first.a].seq + (A.steps[first.a].seq !== B.steps[first.b].seq ? " of A / #" + B.steps[first.b].seq + " of B" : "");
      add(banner, el("b", null, "First divergence: "), where + " " + fs.kind + " " + JSON.stringify(fs.name) + ": " + first.explain);
      var go = el("button", null, "show"); go.type = "button";
      go.addEventListener("click", function () { list.selectItem(DATA.first, true); });
      add(banner, go);
      list.selectItem(DATA.first, true);
    }
    if (wanted !== null && wanted < rows.length) list.selectItem(wanted, true);
  }

  // -- start ----------------------------------------------------------------------------------------
  function start() {
    var app = document.getElementById("rw-app");
    app.replaceChildren();
    if (!DATA) { add(app, el("div", "rw-empty", "This report's data is missing or damaged.")); return; }
    document.title = (DATA.view === "diff" ? "rewind diff · " + DATA.a.label + " ⇄ " + DATA.b.label : "rewind · " + DATA.trace.label);
    if (DATA.view === "diff") diffView(app); else traceView(app);
    window.rewindReport = DATA;  // the data as drawn (rows and totals complete), for a console or a test
    document.body.dataset.ready = "1";
  }
  // "/" jumps to the search box, as in many viewers.
  document.addEventListener("keydown", function (ev) {
    var box = document.getElementById("rw-search");
    if (ev.key === "/" && box && document.activeElement !== box && !/^(INPUT|SELECT|TEXTAREA)$/.test((document.activeElement || {}).tagName || "")) {
      ev.preventDefault();
      box.focus();
      box.select();
    }
  });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
