/* agent-rewind report: what each step's row shows (its one-line outcome, model, tokens,
 * cost, streamed text) and the trace's token and cost totals, computed in the page from
 * the step lines embedded in it.
 *
 * The rules are rewind/_preview.py's (outcome, model_of, stream_text), rewind/_escape.py's
 * (inert) and rewind/accounting.py's (usage_of, price_for, account), one for one: the page works them
 * out while it opens, so building a report costs about what opening the trace costs
 * instead of a Python parse of every step. Python still summarizes the steps whose bodies
 * a report leaves out (past its size budget), and the browser tests check both sides
 * agree step by step. Values here come from JSON, so Python's `or` is `truthy` below and
 * its str() of a value is `pyStr`; a JSON number like 5.0 counts as the integer 5 (JSON.parse
 * cannot tell them apart), where Python would skip it as a float. */
var rewindSummaries = (function () {
  "use strict";

  var ELLIPSIS = "\u2026";
  var SUMMARY = 240;
  var STREAMED = 20000;
  var UNKNOWN_MODEL = "(unknown model)";
  var BOUNDARY = "-@:_";

  function isObj(v) { return v !== null && typeof v === "object" && !Array.isArray(v); }
  /* Python's truthiness: empty strings, lists and objects, 0, null and false are false. */
  function truthy(v) {
    if (Array.isArray(v)) return v.length > 0;
    if (isObj(v)) { for (var k in v) if (Object.prototype.hasOwnProperty.call(v, k)) return true; return false; }
    return !!v;
  }
  /* `a or b or …` as Python evaluates it. */
  function either() {
    for (var i = 0; i < arguments.length - 1; i++) if (truthy(arguments[i])) return arguments[i];
    return arguments[arguments.length - 1];
  }
  function field(obj, key) { return isObj(obj) && Object.prototype.hasOwnProperty.call(obj, key) ? obj[key] : null; }
  function pyStr(v) {
    if (typeof v === "string") return v;
    if (v === null || v === undefined) return "None";
    if (v === true) return "True";
    if (v === false) return "False";
    return compact(v);
  }
  function int(v) { return typeof v === "number" && Number.isInteger(v) ? v : null; }

  // -- rewind/_escape.py: control and invisible formatting characters shown as escapes ----
  // (`u`: a surrogate pair is one character here, as in Python; only a lone one matches)
  var INERT = /[\u0000-\u001f\u007f-\u009f\ud800-\udfff\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]/gu;
  var NAMED = { "\t": "\\t", "\n": "\\n", "\r": "\\r" };
  function inert(text) {
    return text.replace(INERT, function (c) {
      if (NAMED[c]) return NAMED[c];
      var code = c.charCodeAt(0);
      return code <= 0xff ? "\\x" + ("0" + code.toString(16)).slice(-2) : "\\u" + ("000" + code.toString(16)).slice(-4);
    });
  }

  // -- rewind/_preview.py ----------------------------------------------------------------
  function clip(text, limit) {
    if (/[\n\r\t]/.test(text)) text = text.split(/\s+/).filter(Boolean).join(" ");
    text = inert(text);
    if (limit !== null && limit !== undefined && text.length > limit) return text.slice(0, Math.max(0, limit - 1)) + ELLIPSIS;
    return text;
  }
  function compact(value, limit) {
    if (typeof value === "string") return clip(value, limit);
    var text;
    try { text = JSON.stringify(value === undefined ? null : value); } catch (e) { text = String(value); }
    return clip(text, limit);
  }
  function errorLine(error) {
    if (!isObj(error)) return compact(error);
    var kind = pyStr(either(field(error, "qualname"), field(error, "type"), "error"));
    var message = "message" in error ? pyStr(error.message) : "";
    return clip(message ? kind + ": " + message : kind, null);
  }
  function modelIn(payload) {
    if (!isObj(payload)) return null;
    var holders = [payload, field(payload, "message"), field(payload, "response")];
    for (var i = 0; i < holders.length; i++) {
      var holder = holders[i];
      if (!isObj(holder)) continue;
      var model = either(field(holder, "model"), field(holder, "model_version"), field(holder, "modelVersion"));
      if (typeof model === "string" && model) return model;
    }
    return null;
  }
  function streamChunks(body) {
    var stream = field(body, "stream");
    if (Array.isArray(stream)) return stream;
    if (isObj(stream)) {
      var keys = ["chunks", "events", "items"];
      for (var i = 0; i < keys.length; i++) if (Array.isArray(stream[keys[i]])) return stream[keys[i]];
    }
    return [];
  }
  function unwrapChunk(chunk) {
    if (isObj(chunk) && !("choices" in chunk) && !("type" in chunk)) {
      var keys = ["data", "chunk", "event"];
      for (var i = 0; i < keys.length; i++) if (isObj(chunk[keys[i]])) return chunk[keys[i]];
    }
    return chunk;
  }
  function streamHead(body) {
    var chunks = streamChunks(body).slice(0, 3);
    for (var i = 0; i < chunks.length; i++) {
      var chunk = unwrapChunk(chunks[i]);
      if (modelIn(chunk)) return chunk;
    }
    return null;
  }
  /* The model an llm step used: what the provider reported, else what was asked for. */
  function modelOf(body) {
    return modelIn(field(body, "response")) || modelIn(streamHead(body)) || modelIn(field(body, "request"));
  }
  function contentText(content, out) {
    if (typeof content === "string") out.push(content);
    else if (Array.isArray(content)) {
      content.forEach(function (part) {
        if (isObj(part) && typeof part.text === "string") out.push(part.text);
        else if (typeof part === "string") out.push(part);
      });
    }
  }
  function args(value) {
    if (typeof value === "string") {
      try { value = JSON.parse(value); } catch (e) { return clip(value, 60); }
    }
    if (isObj(value)) {
      return clip(Object.keys(value).map(function (k) { return k + "=" + compact(value[k]); }).join(", "), 60);
    }
    return compact(value, 60);
  }
  function call(name, argValue) { return "\u2192 " + pyStr(name) + "(" + args(argValue) + ")"; }
  function answerParts(response) {
    var out = [];
    var choices = response.choices;
    if (Array.isArray(choices) && choices.length && isObj(choices[0])) {  // OpenAI chat
      var message = either(field(choices[0], "message"), {});
      if (isObj(message)) {
        contentText(message.content, out);
        var calls = either(field(message, "tool_calls"), []);
        if (Array.isArray(calls)) {
          calls.forEach(function (c) {
            var fn = isObj(c) ? field(c, "function") : null;
            if (isObj(fn)) out.push(call(field(fn, "name"), field(fn, "arguments")));
          });
        }
      }
      return out;
    }
    var output = response.output;
    if (Array.isArray(output)) {  // OpenAI Responses
      output.forEach(function (item) {
        if (!isObj(item)) return;
        if (item.type === "message") contentText(item.content, out);
        else if (item.type === "function_call") out.push(call(field(item, "name"), field(item, "arguments")));
      });
      return out;
    }
    var content = response.content;
    if (Array.isArray(content) && response.type === "message") {  // Anthropic
      content.forEach(function (block) {
        if (isObj(block) && block.type === "tool_use") out.push(call(field(block, "name"), field(block, "input")));
        else contentText([block], out);
      });
      return out;
    }
    var candidates = response.candidates;
    if (Array.isArray(candidates) && candidates.length && isObj(candidates[0])) {  // Gemini
      var parts = isObj(candidates[0].content) ? candidates[0].content.parts : null;
      (Array.isArray(parts) ? parts : []).forEach(function (part) {
        if (isObj(part) && typeof part.text === "string") out.push(part.text);
        else if (isObj(part)) {
          var fc = either(field(part, "function_call"), field(part, "functionCall"));
          if (isObj(fc)) out.push(call(field(fc, "name"), field(fc, "args")));
        }
      });
    }
    return out;
  }
  function answerText(response) {
    if (!isObj(response)) return null;
    var parts = answerParts(response);
    return parts.length ? parts.filter(Boolean).join(" ") : null;
  }
  function streamText(body) {
    var pieces = [];
    streamChunks(body).forEach(function (chunk) {
      chunk = unwrapChunk(chunk);
      if (!isObj(chunk)) return;
      if (Array.isArray(chunk.choices)) {
        chunk.choices.forEach(function (choice) {
          var delta = isObj(choice) ? choice.delta : null;
          if (isObj(delta) && typeof delta.content === "string") pieces.push(delta.content);
        });
        return;
      }
      if (chunk.type === "response.output_text.delta" && typeof chunk.delta === "string") pieces.push(chunk.delta);
      else if (chunk.type === "content_block_delta" && isObj(chunk.delta) && typeof chunk.delta.text === "string") pieces.push(chunk.delta.text);
    });
    return pieces.length ? pieces.join("") : null;
  }
  /* What a step returned, in one line: the answer text, an error, or compact JSON. */
  function outcome(row, body, limit) {
    if (!row.ok) return clip("\u2717 " + errorLine(field(body, "error")), limit);
    var response = field(body, "response");
    var stream = field(body, "stream");
    var text = row.kind === "llm" ? answerText(response) : null;
    if (text === null && response === null && stream !== null) {
      var streamed = streamText(body);
      text = ("[stream, " + streamChunks(body).length + " chunks] " + (streamed || "")).replace(/\s+$/, "");
    }
    if (text === null) text = compact(response);
    if (isObj(stream) && truthy(stream.truncated)) text = "[stream cut short] " + text;
    return clip(text, limit);
  }

  // -- rewind/accounting.py ----------------------------------------------------------------
  function fromUsage(usage) {
    var billed = either(field(usage, "billed_units"), field(usage, "tokens"));  // Cohere v2
    if (isObj(billed) && int(usage.input_tokens) === null) usage = billed;
    var prompt = int(usage.prompt_tokens);  // OpenAI chat / embeddings, Mistral
    if (prompt !== null) return [prompt, int(usage.completion_tokens) || 0];
    var input = int(usage.input_tokens), output = int(usage.output_tokens);  // OpenAI Responses, Anthropic
    if (input === null && output === null) return null;
    if (input !== null) input += (int(usage.cache_creation_input_tokens) || 0) + (int(usage.cache_read_input_tokens) || 0);
    return [input, output];
  }
  function fromGemini(meta) {
    var prompt = int("prompt_token_count" in meta ? meta.prompt_token_count : meta.promptTokenCount);
    if (prompt === null) return null;
    var output = int("candidates_token_count" in meta ? meta.candidates_token_count : meta.candidatesTokenCount) || 0;
    output += int("thoughts_token_count" in meta ? meta.thoughts_token_count : meta.thoughtsTokenCount) || 0;
    return [prompt, output];
  }
  function usageIn(payload) {
    if (!isObj(payload)) return null;
    var holders = [payload, field(payload, "response"), field(payload, "message")];
    for (var i = 0; i < holders.length; i++) {
      var holder = holders[i];
      if (!isObj(holder)) continue;
      var found = isObj(holder.usage) ? fromUsage(holder.usage) : null;
      if (found) return found;
      var meta = "usage_metadata" in holder ? holder.usage_metadata : holder.usageMetadata;
      found = isObj(meta) ? fromGemini(meta) : null;
      if (found) return found;
    }
    return null;
  }
  /* [input tokens, output tokens] recorded for one call, or null when unknown. */
  function usageOf(body) {
    var found = usageIn(field(body, "response"));
    if (found && found[0] !== null) return [found[0], found[1] || 0];
    // Streams report usage in their last chunks, or split across chunks (Anthropic).
    var input = null, output = null;
    streamChunks(body).forEach(function (chunk) {
      var part = usageIn(unwrapChunk(chunk));
      if (!part) return;
      if (part[0] !== null) input = part[0];
      if (part[1] !== null) output = part[1];
    });
    return input === null ? null : [input, output || 0];
  }
  /* The most specific price: an exact name, else the longest listed prefix ending at a
   * separator; on equally specific entries the user's table (rank 0) wins. */
  function priceFor(model, prices) {
    var name = model.toLowerCase();
    var names = [name];
    if (name.indexOf("/") >= 0) names.push(name.slice(name.lastIndexOf("/") + 1));
    for (var n = 0; n < names.length; n++) {
      var candidate = names[n], best = null;
      for (var i = 0; i < prices.length; i++) {
        var key = prices[i][0], rank = prices[i][3], length;
        if (candidate === key) length = key.length + 1;
        else if (candidate.length > key.length && candidate.lastIndexOf(key, 0) === 0 && BOUNDARY.indexOf(candidate[key.length]) >= 0) length = key.length;
        else continue;
        if (best === null || length > best.length || (length === best.length && rank < best.rank)) {
          best = { length: length, rank: rank, input: prices[i][1], output: prices[i][2] };
        }
      }
      if (best !== null) return best;
    }
    return null;
  }
  function cost(price, tokens) { return (tokens[0] * price.input + tokens[1] * price.output) / 1000000; }

  // -- the report's rows and totals -----------------------------------------------------------
  /* Fill in what `row` shows from its step's parsed line. */
  function summarize(row, body, prices, cache) {
    body = isObj(body) ? body : {};
    row.summary = outcome(row, body, SUMMARY);
    if (!row.ok) row.error = errorLine(field(body, "error"));
    var stream = field(body, "stream");
    if (row.kind === "llm") {
      var model = modelOf(body);
      row.model = model;
      var tokens = usageOf(body);
      if (tokens !== null) {
        row.tin = tokens[0];
        row.tout = tokens[1];
        if (model !== null && row.live) {
          if (!cache.has(model)) cache.set(model, priceFor(model, prices));
          var price = cache.get(model);
          if (price !== null) row.cost = cost(price, tokens);
        }
      }
      if (stream !== null) {
        var streamed = streamText(body);
        if (streamed) row.streamed = streamed.length <= STREAMED ? streamed : streamed.slice(0, STREAMED) + " \u2026";
      }
    }
    if (isObj(stream) && truthy(stream.truncated)) row.flags.push("stream-cut");
  }
  /* rewind.account over the rows: llm steps run live, per model, sorted by name. */
  function tally(rows, prices, cache) {
    var models = new Map(), replayed = 0;
    rows.forEach(function (row) {
      if (row.kind !== "llm") return;
      if (!row.live) { replayed++; return; }
      var model = row.model || UNKNOWN_MODEL;
      var m = models.get(model);
      if (!m) models.set(model, m = { model: model, calls: 0, withUsage: 0, input: 0, output: 0 });
      m.calls++;
      if (row.tin !== undefined) { m.withUsage++; m.input += row.tin; m.output += row.tout; }
    });
    var names = Array.from(models.keys()).sort(function (a, b) { return a < b ? -1 : a > b ? 1 : 0; });
    var perModel = [], withoutUsage = 0, input = 0, output = 0, total = null, unpriced = [];
    names.forEach(function (name) {
      var m = models.get(name);
      var price = null;
      if (name !== UNKNOWN_MODEL) {
        if (!cache.has(name)) cache.set(name, priceFor(name, prices));
        price = cache.get(name);
      }
      var c = price !== null && m.withUsage ? cost(price, [m.input, m.output]) : null;
      if (c !== null) total = total === null ? c : total + c;
      if (price === null && m.withUsage) unpriced.push(name);
      withoutUsage += m.calls - m.withUsage;
      input += m.input;
      output += m.output;
      perModel.push({ model: name, calls: m.calls, without_usage: m.calls - m.withUsage, input_tokens: m.input, output_tokens: m.output, cost: c });
    });
    return {
      input_tokens: input,
      output_tokens: output,
      cost: total,
      calls_without_usage: withoutUsage,
      unpriced_models: unpriced,
      replayed_llm_calls: replayed,
      models: perModel
    };
  }
  /* One row per step from the section's columns (what the skeletons tell), each
   * summarized, and the totals completed; `body(i)` parses step i's embedded line. */
  function complete(section, body) {
    var c = section.columns, known = section.summarized || {}, prices = section.prices || [], cache = new Map();
    var rows = new Array(c.seq.length);
    for (var i = 0; i < rows.length; i++) {
      var row = { i: i, seq: c.seq[i], kind: c.kind[i], name: c.name[i], t: c.t[i], d: c.d[i], ok: c.ok[i], live: c.live[i], flags: c.flags[i] };
      var given = known[String(i)];
      if (isObj(given)) { for (var key in given) if (Object.prototype.hasOwnProperty.call(given, key)) row[key] = given[key]; }
      else summarize(row, body(i), prices, cache);
      rows[i] = row;
    }
    section.steps = rows;
    var usage = tally(rows, prices, cache);
    for (var name in usage) if (Object.prototype.hasOwnProperty.call(usage, name)) section.totals[name] = usage[name];
  }

  return { complete: complete, outcome: outcome, usageOf: usageOf, modelOf: modelOf, priceFor: priceFor };
})();
