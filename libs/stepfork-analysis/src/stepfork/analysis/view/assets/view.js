// Stepfork view: renders the JSON embedded in this page. Bundle data is text only: every value reaches
// the page through textContent or DOM building (never parsed as markup); no URL is built from data.
(function () {
  "use strict";
  var ROW = 24;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function readJson(id) {
    var node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : null;
  }
  function fmtMs(ms) {
    if (ms === null || ms === undefined) return "-";
    if (ms < 1) return ms.toFixed(2) + " ms";
    if (ms < 1000) return Math.round(ms) + " ms";
    return (ms / 1000).toFixed(2) + " s";
  }
  function fmtCost(c) {
    return c === null || c === undefined ? "-" : "$" + Number(c).toFixed(4);
  }
  function escToken(k) {
    return String(k).replace(/~/g, "~0").replace(/\//g, "~1");
  }

  var events = readJson("sf-events") || [];
  var meta = readJson("sf-meta") || {};
  var app = document.getElementById("app");
  app.textContent = "";
  var status = el("div", "statusbar", "");
  status.id = "statusbar";

  // ---------------------------------------------------------------------------------- copy a pointer
  function copyPointer(ptr) {
    var shown = ptr === "" ? '"" (the whole value)' : ptr;
    status.textContent = "JSON Pointer: " + shown;
    status.dataset.pointer = ptr;
    try {
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(ptr).then(
          function () { status.textContent = "Copied JSON Pointer: " + shown; },
          function () {}
        );
      }
    } catch (e) { /* clipboard refused (file:// pages): the pointer stays shown in the status bar */ }
  }

  // ------------------------------------------------------------------------------- collapsible JSON
  function jsonTree(value, rootPtr, highlights) {
    var hl = highlights || [];
    function within(ptr) {
      for (var i = 0; i < hl.length; i++) {
        if (hl[i] === ptr || hl[i].indexOf(ptr + "/") === 0) return true;
      }
      return false;
    }
    function ptrButton(ptr) {
      var b = el("button", "ptr", "#");
      b.type = "button";
      b.title = "Copy JSON Pointer " + (ptr === "" ? '""' : ptr);
      b.dataset.pointer = ptr;
      b.addEventListener("click", function (ev) {
        ev.preventDefault();
        ev.stopPropagation();
        copyPointer(ptr);
      });
      return b;
    }
    function keyLabel(parent, key) {
      if (key === null) return;
      parent.appendChild(el("span", "jkey", key));
      parent.appendChild(el("span", "jpunct", ": "));
    }
    function node(key, v, ptr, depth) {
      var hit = hl.indexOf(ptr) >= 0;
      if (v === null || typeof v !== "object") {
        var line = el("div", "jline" + (hit ? " hl" : ""));
        line.dataset.pointer = ptr;
        keyLabel(line, key);
        var t = v === null ? "null" : typeof v;
        line.appendChild(el("span", "jval j" + t, JSON.stringify(v)));
        line.appendChild(ptrButton(ptr));
        return line;
      }
      var isArr = Array.isArray(v);
      var keys = isArr ? null : Object.keys(v);
      var d = el("details", "jnode" + (hit ? " hl" : ""));
      d.dataset.pointer = ptr;
      var s = el("summary");
      keyLabel(s, key);
      s.appendChild(el("span", "jmeta", isArr ? "[" + v.length + "]" : "{" + keys.length + "}"));
      s.appendChild(ptrButton(ptr));
      d.appendChild(s);
      var built = false;
      function build() {
        if (built) return;
        built = true;
        var kids = el("div", "jkids");
        var n = isArr ? v.length : keys.length;
        for (var i = 0; i < n; i++) {
          var k = isArr ? i : keys[i];
          kids.appendChild(node(isArr ? String(i) : k, v[k], ptr + "/" + escToken(k), depth + 1));
        }
        d.appendChild(kids);
      }
      if (depth < 2 || within(ptr)) {
        build();
        d.open = true;
      } else {
        d.addEventListener("toggle", build);
      }
      return d;
    }
    var root = el("div", "json");
    root.appendChild(node(null, value, rootPtr, 0));
    return root;
  }

  // ----------------------------------------------------------------------- virtual list (visible rows)
  function VList(host, render, onSelect) {
    var box = el("div", "vlist");
    box.tabIndex = 0;
    box.setAttribute("role", "listbox");
    var spacer = el("div", "vspacer");
    box.appendChild(spacer);
    host.appendChild(box);
    var n = 0;
    var selected = -1;
    var pending = false;
    function draw() {
      pending = false;
      var top = box.scrollTop;
      var h = box.clientHeight || 600;
      var first = Math.max(0, Math.floor(top / ROW) - 5);
      var last = Math.min(n, Math.ceil((top + h) / ROW) + 5);
      spacer.textContent = "";
      for (var i = first; i < last; i++) {
        var r = el("div", "vrow");
        r.style.top = i * ROW + "px";
        r.dataset.index = String(i);
        r.setAttribute("role", "option");
        render(i, r);
        if (i === selected) r.classList.add("selected");
        spacer.appendChild(r);
      }
    }
    function schedule() {
      if (!pending) {
        pending = true;
        requestAnimationFrame(draw);
      }
    }
    function select(i) {
      if (n === 0) return;
      i = Math.max(0, Math.min(n - 1, i));
      selected = i;
      if (i * ROW < box.scrollTop) box.scrollTop = i * ROW;
      else if ((i + 1) * ROW > box.scrollTop + box.clientHeight) box.scrollTop = (i + 1) * ROW - box.clientHeight;
      draw();
      onSelect(i);
    }
    box.addEventListener("scroll", schedule);
    window.addEventListener("resize", schedule);
    box.addEventListener("click", function (ev) {
      var r = ev.target.closest(".vrow");
      if (r) select(Number(r.dataset.index));
    });
    box.addEventListener("keydown", function (ev) {
      var page = Math.max(1, Math.floor(box.clientHeight / ROW) - 1);
      var k = ev.key;
      var to = null;
      if (k === "ArrowDown" || k === "j") to = selected + 1;
      else if (k === "ArrowUp" || k === "k") to = selected < 0 ? 0 : selected - 1;
      else if (k === "PageDown") to = selected + page;
      else if (k === "PageUp") to = selected - page;
      else if (k === "Home") to = 0;
      else if (k === "End") to = n - 1;
      if (to !== null) {
        ev.preventDefault();
        select(to);
      }
    });
    return {
      setCount: function (c) {
        n = c;
        selected = -1;
        spacer.style.height = c * ROW + "px";
        box.scrollTop = 0;
        draw();
      },
      select: select,
      focus: function () { box.focus(); },
      selected: function () { return selected; },
    };
  }

  // ------------------------------------------------------------------------------- spans from events
  var RESULT_OF = { tool_call: "tool_result", llm_request: "llm_response", run_start: "run_end" };
  function spanName(ev) {
    if (ev.type === "tool_call" || ev.type === "tool_result") return ev.name;
    if (ev.type === "llm_request") return ev.provider ? ev.provider + "/" + ev.model : ev.model;
    if (ev.type === "llm_response") return ev.model || "llm";
    if (ev.type === "error") return ev.error_type;
    if (ev.type === "state_change") return ev.key || "state";
    if (ev.type === "run_start") return "run";
    if (ev.type === "run_end") return ev.run_status || "run end";
    return ev.type;
  }
  var KIND = { tool_call: "tool", tool_result: "tool", llm_request: "llm", llm_response: "llm", run_start: "run",
    run_end: "run", state_change: "state", error: "error" };

  function buildSpans(evs) {
    var spanOf = new Map();
    var roots = [];
    var all = [];
    for (var i = 0; i < evs.length; i++) {
      var ev = evs[i];
      var parent = ev.parent_id != null ? spanOf.get(ev.parent_id) : undefined;
      if (parent && RESULT_OF[parent.call.type] === ev.type && !parent.result) {
        parent.result = ev;
        spanOf.set(ev.id, parent);
        continue;
      }
      if (parent && ev.type === "error" && !parent.error && (parent.call.type === "tool_call" || parent.call.type === "llm_request")) {
        parent.error = ev;
        spanOf.set(ev.id, parent);
        continue;
      }
      var span = { call: ev, result: null, error: null, children: [], depth: parent ? parent.depth + 1 : 0 };
      spanOf.set(ev.id, span);
      all.push(span);
      if (parent) parent.children.push(span);
      else roots.push(span);
    }
    var last = 0;
    for (var j = 0; j < evs.length; j++) last = Math.max(last, evs[j].t);
    var flat = [];
    var stack = roots.slice().reverse();
    while (stack.length) {
      var s = stack.pop();
      flat.push(s);
      for (var c = s.children.length - 1; c >= 0; c--) stack.push(s.children[c]);
    }
    var tmin = Infinity;
    var tmax = -Infinity;
    flat.forEach(function (sp, idx) {
      var ev = sp.call;
      sp.index = idx;
      sp.kind = KIND[ev.type] || ev.type;
      sp.name = spanName(ev);
      sp.start = ev.t;
      var end = ev.t + (ev.duration_ms || 0) * 1000;
      if (sp.result) end = Math.max(end, sp.result.t, ev.t + (sp.result.duration_ms || 0) * 1000);
      if (sp.error) end = Math.max(end, sp.error.t);
      if (ev.type === "run_start" && !sp.result) end = last;
      sp.end = end;
      sp.isError = ev.status === "error" || !!sp.error || (sp.result && sp.result.status === "error") ||
        ev.type === "error" || ev.run_status === "failed" || (sp.result && sp.result.run_status === "failed");
      sp.isCall = ev.type === "tool_call" || ev.type === "llm_request";
      tmin = Math.min(tmin, sp.start);
      tmax = Math.max(tmax, sp.end);
    });
    if (!isFinite(tmin)) { tmin = 0; tmax = 1; }
    return { spans: flat, tmin: tmin, range: Math.max(1, tmax - tmin) };
  }

  // ----------------------------------------------------------------------------------------- pieces
  function summaryBlock(title, pairs) {
    var box = el("section", "summary");
    box.appendChild(el("h1", null, title));
    var dl = el("dl");
    pairs.forEach(function (p) {
      if (p[1] === undefined) return;
      var item = el("div", "item" + (p[2] ? " " + p[2] : ""));
      item.appendChild(el("dt", null, p[0]));
      item.appendChild(el("dd", null, p[1] === null ? "-" : p[1]));
      dl.appendChild(item);
    });
    box.appendChild(dl);
    return box;
  }
  function traceSummaryPairs(s) {
    if (!s) return [];
    var pairs = [
      ["Agent", s.agent_name],
      ["Run", s.run_id],
      ["Status", String(s.status).toUpperCase(), s.status === "failed" ? "bad" : ""],
      ["Duration", fmtMs(s.duration_ms)],
      ["Calls", s.tool_calls + " tool" + (s.http_requests ? " (" + s.http_requests + " HTTP outside the agent's order)" : "") +
        ", " + s.llm_calls + " LLM"],
      ["Events", s.events],
      ["Tokens", s.total_tokens + " (" + s.prompt_tokens + " in, " + s.completion_tokens + " out)"],
      ["Cost", fmtCost(s.cost_usd)],
      ["Integrity", s.integrity ? String(s.integrity).toUpperCase() : "not checked (in memory)",
        s.integrity === "mismatch" ? "bad" : ""],
      ["Errors", s.errors, s.errors ? "bad" : ""],
    ];
    if (s.failure) pairs.push(["Failure", s.failure.type + ": " + s.failure.message, "bad"]);
    if (s.torn_line) pairs.push(["Partial", "events.jsonl line " + s.torn_line + " was cut by a crash and is not shown", "bad"]);
    return pairs;
  }
  function section(parent, title, body) {
    var sec = el("section", "block");
    sec.appendChild(el("h3", null, title));
    if (body) sec.appendChild(body);
    parent.appendChild(sec);
    return sec;
  }
  function kvTable(pairs) {
    var t = el("table", "kv");
    pairs.forEach(function (p) {
      if (p[1] === undefined || p[1] === null) return;
      var tr = el("tr");
      tr.appendChild(el("th", null, p[0]));
      var td = el("td", p[2] || null, p[1]);
      tr.appendChild(td);
      t.appendChild(tr);
    });
    return t;
  }

  // ------------------------------------------------------------------------------- the trace explorer
  // extras: {columnFor(span) -> [text, cls] | null, highlightsFor(span) -> {input: [...], ...},
  //          detailExtra(span, panel), initial: span index or null}
  function traceExplorer(parent, built, extras) {
    extras = extras || {};
    var spans = built.spans;
    var toolbar = el("div", "toolbar");
    var kindSel = el("select");
    kindSel.id = "filter-kind";
    kindSel.setAttribute("aria-label", "Filter by kind");
    [["all", "All kinds"], ["tool", "Tool calls"], ["llm", "LLM calls"], ["error", "Errors"], ["run", "Run"],
      ["state", "State changes"]].forEach(function (o) {
      var opt = el("option", null, o[1]);
      opt.value = o[0];
      kindSel.appendChild(opt);
    });
    var nameIn = el("input");
    nameIn.type = "search";
    nameIn.id = "filter-name";
    nameIn.placeholder = "Filter by name ( / )";
    nameIn.setAttribute("aria-label", "Filter by name");
    var count = el("span", "count");
    count.id = "row-count";
    toolbar.appendChild(kindSel);
    toolbar.appendChild(nameIn);
    toolbar.appendChild(count);
    toolbar.appendChild(el("span", "hint", "Keys: Up/Down or j/k move, Home/End, / filters, Esc back to the list"));
    parent.appendChild(toolbar);

    var split = el("div", "split");
    var left = el("div", "left");
    var head = el("div", "vhead");
    ["Call", extras.columnTitle || "Status", "Duration", "Timeline"].forEach(function (h) { head.appendChild(el("span", null, h)); });
    left.appendChild(head);
    var detail = el("div", "detail");
    detail.id = "detail";
    detail.appendChild(el("p", "muted", "Select a call to see its input and output."));
    split.appendChild(left);
    split.appendChild(detail);
    parent.appendChild(split);

    var visible = spans;
    var list = VList(left, function (i, row) {
      var sp = visible[i];
      row.classList.add("k-" + sp.kind);
      if (sp.isError) row.classList.add("err");
      var name = el("span", "cname");
      name.style.paddingLeft = 4 + sp.depth * 14 + "px";
      name.appendChild(el("span", "chip " + sp.kind, sp.kind));
      name.appendChild(el("span", "label", sp.name));
      if (sp.isError) name.appendChild(el("span", "errmark", "!"));
      row.appendChild(name);
      var col = extras.columnFor ? extras.columnFor(sp) : null;
      if (col) row.appendChild(el("span", "cstat " + (col[1] || ""), col[0]));
      else row.appendChild(el("span", "cstat", sp.isError ? "error" : (sp.call.status || "")));
      row.appendChild(el("span", "cdur", fmtMs((sp.end - sp.start) / 1000)));
      var lane = el("span", "lane");
      var bar = el("span", "bar " + sp.kind + (sp.isError ? " err" : ""));
      bar.style.left = ((sp.start - built.tmin) / built.range) * 100 + "%";
      bar.style.width = Math.max(0.4, ((sp.end - sp.start) / built.range) * 100) + "%";
      lane.appendChild(bar);
      row.appendChild(lane);
      row.title = sp.call.type + " " + sp.name + " (step " + sp.call.step + ")";
    }, function (i) { showSpan(visible[i]); });

    function applyFilter() {
      var kind = kindSel.value;
      var q = nameIn.value.trim().toLowerCase();
      visible = spans.filter(function (sp) {
        if (kind === "error" ? !sp.isError : kind !== "all" && sp.kind !== kind) return false;
        return !q || String(sp.name).toLowerCase().indexOf(q) >= 0;
      });
      count.textContent = visible.length + " of " + spans.length + " rows";
      list.setCount(visible.length);
    }
    kindSel.addEventListener("change", applyFilter);
    nameIn.addEventListener("input", applyFilter);
    nameIn.addEventListener("keydown", function (ev) {
      if (ev.key === "Escape" || ev.key === "Enter") { ev.preventDefault(); list.focus(); if (list.selected() < 0) list.select(0); }
    });
    document.addEventListener("keydown", function (ev) {
      if (ev.key === "/" && document.activeElement !== nameIn) { ev.preventDefault(); nameIn.focus(); }
    });

    function payload(panel, title, value, ptr, hl) {
      if (value === undefined) return;
      section(panel, title, jsonTree(value, ptr, hl));
    }
    function showSpan(sp) {
      detail.textContent = "";
      var ev = sp.call;
      var h = el("h2", sp.isError ? "bad" : null);
      h.appendChild(el("span", "chip " + sp.kind, sp.kind));
      h.appendChild(el("span", "label", sp.name));
      detail.appendChild(h);
      var res = sp.result;
      var hl = extras.highlightsFor ? extras.highlightsFor(sp) : {};
      if (extras.detailExtra) extras.detailExtra(sp, detail);
      var pairs = [
        ["Event type", ev.type + (res ? " + " + res.type : "") + (sp.error ? " + error" : "")],
        ["Status", sp.isError ? "error" : ev.status, sp.isError ? "bad" : null],
        ["Step", ev.step + (res ? " -> " + res.step : "")],
        ["Started", ev.timestamp],
        ["Start offset", fmtMs(ev.t / 1000)],
        ["Duration", fmtMs((sp.end - sp.start) / 1000)],
        ["Recorded duration_ms", res && res.duration_ms != null ? res.duration_ms : ev.duration_ms],
        ["Replay policy", ev.replay_policy],
        ["Event id", ev.id],
        ["Parent id", ev.parent_id],
        ["Input fingerprint", ev.input_hash, "mono"],
        ["Output fingerprint", res ? res.output_hash : ev.output_hash, "mono"],
      ];
      if (res && res.type === "llm_response") {
        pairs.push(["Tokens", [res.prompt_tokens, res.completion_tokens, res.total_tokens].map(function (x) { return x == null ? "-" : x; }).join(" / ") + " (prompt / completion / total)"]);
        pairs.push(["Cost", fmtCost(res.cost_usd)]);
      }
      section(detail, "Call", kvTable(pairs));
      if (ev.type === "state_change") {
        payload(detail, "Before", ev.before, "/before", hl.before);
        payload(detail, "After", ev.after, "/after", hl.after);
      } else if (ev.type === "error") {
        section(detail, "Error", kvTable([["Type", ev.error_type, "bad"], ["Message", ev.message]]));
        payload(detail, "Details", ev.details, "/details", hl.details);
      } else {
        payload(detail, "Input", ev.input, "/input", hl.input);
        if (ev.output !== undefined) payload(detail, "Output", ev.output, "/output", hl.output);
      }
      if (res && res.output !== undefined) payload(detail, "Output", res.output, "/output", hl.output);
      if (sp.error) {
        section(detail, "Error", kvTable([["Type", sp.error.error_type, "bad"], ["Message", sp.error.message]]));
        payload(detail, "Error details", sp.error.details, "/details", hl.details);
      }
    }

    applyFilter();
    var initial = extras.initial;
    if (initial !== null && initial !== undefined && initial >= 0) list.select(initial);
    return list;
  }

  // --------------------------------------------------------------------------------------------- views
  function traceView() {
    var built = buildSpans(events);
    app.appendChild(summaryBlock("Stepfork run", traceSummaryPairs(meta.summary)));
    traceExplorer(app, built, {});
  }

  function minimizeView() {
    var m = meta.minimize || {};
    var kept = new Set(meta.kept_steps || []);
    app.appendChild(summaryBlock("Stepfork minimization", [
      ["Agent", m.agent_name],
      ["Original", m.original],
      ["Minimized", m.output],
      ["Events", m.original_events + " -> " + m.minimized_events + " (" + m.reduction + "% removed)"],
      ["Calls removed", m.removed_calls],
      ["Failure", m.signature ? m.signature.kind + ": " + m.signature.detail : null],
      ["1-minimal", m.minimal ? "yes" : "no"],
      ["Replays cleanly", m.clean_replay && m.clean_replay.clean ? "yes" : "no"],
    ]));
    var built = buildSpans(events);
    traceExplorer(app, built, {
      columnTitle: "Minimized",
      columnFor: function (sp) {
        if (!sp.isCall) return null;
        return kept.has(sp.call.step) ? ["kept", "kept"] : ["removed", "removed"];
      },
    });
  }

  function replayView() {
    var o = meta.outcome || {};
    var dv = meta.divergence;
    var statusText = o.exit_code === 0 ? "COMPLETED" : o.exit_code === 1 ? "DIVERGED" : "REJECTED";
    var ex = o.execution || {};
    var pairs = [
      ["Agent", o.agent_name],
      ["Run", o.run_id],
      ["Mode", o.mode],
      ["Status", statusText, o.exit_code ? "bad" : "good"],
      ["Execution", ex.status + (ex.error_type ? " " + ex.error_type + ": " + ex.error_message : "")],
      ["Dependency matching", o.matching.status + " (" + o.matching.matched + " of " + o.matching.total + " calls)",
        o.matching.status === "DIVERGED" ? "bad" : ""],
      ["Recorded behavior", o.behavior.status + (o.behavior.path ? " at " + o.behavior.path : "")],
    ];
    app.appendChild(summaryBlock("Stepfork replay report", pairs));
    if (dv) {
      var box = el("section", "divergence");
      box.id = "divergence";
      box.appendChild(el("h2", null, "Divergence"));
      var lines = [
        ["Where", "call #" + (dv.index === null ? "-" : dv.index + 1) + (dv.step === null ? " (past the recording)" : ", recorded step " + dv.step)],
        ["Expected", (dv.expected_kind || "-") + " " + (dv.expected_label || "-")],
        ["Actual", (dv.actual_kind || "-") + " " + (dv.actual_label || "-")],
        ["Path", dv.path, "mono bad"],
        ["JSON Pointer", dv.pointer === null ? null : dv.pointer === "" ? '"" (the whole input)' : "/input" + dv.pointer, "mono"],
        ["Recorded input", dv.expected_input, "mono"],
        ["Live input", dv.actual_input, "mono"],
        ["Message", dv.message],
      ];
      box.appendChild(kvTable(lines));
      app.appendChild(box);
    }
    if (o.behavior && o.behavior.message && o.behavior.status !== "MATCHED") {
      app.appendChild(el("p", "note", "Behavior: " + o.behavior.message));
    }
    var byStep = new Map();
    (o.calls || []).forEach(function (c) { byStep.set(c.step, c); });
    var built = buildSpans(events);
    var initial = null;
    if (dv && dv.step !== null) {
      built.spans.forEach(function (sp) { if (sp.call.step === dv.step) initial = sp.index; });
    }
    traceExplorer(app, built, {
      columnTitle: "Replay",
      columnFor: function (sp) {
        if (dv && dv.step !== null && sp.call.step === dv.step) return ["diverged", "bad"];
        if (!sp.isCall) return null;
        var c = byStep.get(sp.call.step);
        return c ? [c.action, c.action] : ["not reached", "muted"];
      },
      highlightsFor: function (sp) {
        if (dv && dv.step === sp.call.step && dv.pointer !== null) return { input: ["/input" + dv.pointer] };
        return {};
      },
      detailExtra: function (sp, panel) {
        var c = byStep.get(sp.call.step);
        var diverged = dv && dv.step === sp.call.step;
        if (!c && !diverged) return;
        var body = el("div");
        if (c) body.appendChild(kvTable([["Action", c.action], ["Replay call", "#" + (c.index + 1) + " " + c.kind + " " + c.label]]));
        if (diverged) body.appendChild(kvTable([["Diverged at", dv.path, "mono bad"], ["Live input", dv.actual_input, "mono"]]));
        if (c && c.input !== undefined) {
          body.appendChild(el("h4", null, "Input the agent gave on replay"));
          body.appendChild(jsonTree(c.input, "/input", diverged && dv.pointer !== null ? ["/input" + dv.pointer] : []));
        }
        section(panel, "On replay", body);
      },
      initial: initial,
    });
  }

  function diffView() {
    var b = meta.baseline || {};
    var c = meta.candidate || {};
    var counts = meta.counts || {};
    app.appendChild(summaryBlock("Stepfork diff", [
      ["Result", meta.equivalent ? "BEHAVIOR EQUIVALENT" : "BEHAVIOR CHANGED", meta.equivalent ? "good" : "bad"],
      ["Baseline", (b.path || b.run_id) + " (" + b.agent_name + ", " + b.status + ", " + b.events + " events)"],
      ["Candidate", (c.path || c.run_id) + " (" + c.agent_name + ", " + c.status + ", " + c.events + " events)"],
      ["Steps", counts.changed + " changed, " + counts.added + " added, " + counts.removed + " removed, " + counts.unchanged + " unchanged"],
    ]));
    var steps = meta.steps || [];
    var split = el("div", "split");
    var left = el("div", "left");
    var head = el("div", "vhead diffhead");
    ["", "Baseline", "Candidate"].forEach(function (h) { head.appendChild(el("span", null, h)); });
    left.appendChild(head);
    var detail = el("div", "detail");
    detail.id = "detail";
    detail.appendChild(el("p", "muted", "Select a step to compare both sides."));
    split.appendChild(left);
    split.appendChild(detail);
    app.appendChild(split);
    var MARK = { added: "+", removed: "-", changed: "~", unchanged: " " };
    function sideLabel(s, side) {
      var st = s[side + "_step"];
      return st === null || st === undefined ? "" : s.step_type + " " + s.label + "  (step " + st + ")";
    }
    var first = -1;
    var list = VList(left, function (i, row) {
      var s = steps[i];
      row.classList.add("diffrow", "d-" + s.kind);
      row.appendChild(el("span", "mark", MARK[s.kind] || "?"));
      row.appendChild(el("span", "side base", sideLabel(s, "baseline")));
      row.appendChild(el("span", "side cand", sideLabel(s, "candidate")));
    }, function (i) {
      var s = steps[i];
      detail.textContent = "";
      detail.appendChild(el("h2", s.kind === "unchanged" ? null : "bad", s.kind + ": " + s.step_type + " " + s.label));
      if (s.changes.length) {
        var ul = el("ul", "changes");
        s.changes.forEach(function (ch) {
          var li = el("li", "chg-" + ch.kind);
          li.appendChild(el("span", "mono", ch.path));
          li.appendChild(el("span", "muted", " " + ch.kind + " (pointer " + (ch.pointer === "" ? '""' : ch.pointer) + ")"));
          ul.appendChild(li);
        });
        section(detail, "Changed paths", ul);
      }
      var pointers = s.changes.map(function (ch) { return ch.pointer; });
      var cols = el("div", "cols");
      [["Baseline", s.baseline], ["Candidate", s.candidate]].forEach(function (p) {
        var col = el("div", "col");
        col.appendChild(el("h3", null, p[0]));
        if (p[1] === null || p[1] === undefined) col.appendChild(el("p", "muted", "(absent on this side)"));
        else col.appendChild(jsonTree(p[1], "", pointers));
        cols.appendChild(col);
      });
      detail.appendChild(cols);
    });
    list.setCount(steps.length);
    for (var i = 0; i < steps.length; i++) if (steps[i].kind !== "unchanged") { first = i; break; }
    if (first >= 0) list.select(first);
  }

  var views = { trace: traceView, diff: diffView, replay: replayView, minimize: minimizeView };
  (views[meta.view] || traceView)();
  app.appendChild(status);
  document.documentElement.dataset.ready = "1";
})();
