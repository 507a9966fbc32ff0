// Runnel console: the record browser and the write forms. Everything shown from a
// record is set as text (textContent), never as markup. Writes carry the session's
// CSRF token (GET /api/v1/session) in X-CSRF-Token.
(function () {
  "use strict";
  var body = document.body;
  var topic = body.dataset.topic, group = body.dataset.group;
  var $ = function (id) { return document.getElementById(id); };
  var csrf = null;

  function showError(msg) {
    var e = $("error");
    e.textContent = msg || "";
    e.hidden = !msg;
  }

  function call(method, path, payload) {
    var opts = { method: method, credentials: "same-origin", headers: {} };
    var ready = Promise.resolve();
    if (method !== "GET") {
      ready = csrf ? Promise.resolve() : fetch("/api/v1/session", { credentials: "same-origin" })
        .then(function (r) { return r.json(); }).then(function (s) { csrf = s.csrf_token; });
    }
    return ready.then(function () {
      if (method !== "GET") opts.headers["X-CSRF-Token"] = csrf;
      if (payload !== undefined) {
        opts.headers["Content-Type"] = "application/json";
        opts.body = JSON.stringify(payload);
      }
      return fetch(path, opts);
    }).then(function (r) {
      return r.json().then(function (j) {
        if (!r.ok) throw new Error(j.message || ("HTTP " + r.status));
        showError("");
        return j;
      });
    }).catch(function (err) { showError(err.message); throw err; });
  }

  // lines parses "KEY=VALUE" lines.
  function lines(text) {
    var out = [];
    text.split("\n").forEach(function (l) {
      l = l.trim();
      if (!l) return;
      var i = l.indexOf("=");
      out.push(i < 0 ? { key: l, value: "" } : { key: l.slice(0, i), value: l.slice(i + 1) });
    });
    return out;
  }

  function bytesOf(s, enc) {
    if (enc === "base64") {
      var bin = atob(s), b = new Uint8Array(bin.length);
      for (var i = 0; i < bin.length; i++) b[i] = bin.charCodeAt(i);
      return b;
    }
    return new TextEncoder().encode(s);
  }

  function show(s, enc, format) {
    if (s === null || s === undefined) return "null";
    var b;
    switch (format) {
      case "hex":
        b = bytesOf(s, enc);
        return Array.from(b).map(function (x) { return x.toString(16).padStart(2, "0"); }).join(" ");
      case "base64":
        if (enc === "base64") return s;
        b = bytesOf(s, enc);
        return btoa(Array.from(b).map(function (x) { return String.fromCharCode(x); }).join(""));
      case "json":
        if (enc !== "base64") {
          try { return JSON.stringify(JSON.parse(s), null, 2); } catch (e) { return s; }
        }
    }
    return enc === "base64" ? "(binary, base64) " + s : s;
  }

  function cell(tr, text, cls) {
    var td = document.createElement("td");
    if (cls) td.className = cls;
    var pre = document.createElement("pre");
    pre.textContent = text;
    td.appendChild(pre);
    tr.appendChild(td);
  }

  // The record browser.
  var last = null;
  function browse(params) {
    var q = new URLSearchParams(params);
    q.set("partition", $("partition").value || "0");
    q.set("limit", $("limit").value || "50");
    if ($("filter").value) q.set("filter", $("filter").value);
    return call("GET", "/api/v1/topics/" + encodeURIComponent(topic) + "/records?" + q).then(render);
  }
  function render(page) {
    last = page;
    var format = $("format").value;
    var tb = $("records").tBodies[0];
    tb.textContent = "";
    page.records.forEach(function (r) {
      var tr = document.createElement("tr");
      tr.dataset.offset = r.offset;
      cell(tr, String(r.offset), "num");
      cell(tr, new Date(r.timestamp).toISOString());
      cell(tr, show(r.key, r.key_encoding, "text"), "key");
      cell(tr, show(r.value, r.value_encoding, format), "value");
      cell(tr, r.headers.map(function (h) { return h.key + "=" + show(h.value, h.value_encoding, "text"); }).join("\n"), "headers");
      cell(tr, String(r.size), "num");
      tb.appendChild(tr);
    });
    $("page-info").textContent = "Partition " + page.partition + ": offsets " + page.log_start + " to " + page.high_watermark +
      "; read " + page.scanned + " from offset " + page.from + ", " + page.records.length + " shown" +
      (page.filter ? " matching \u201c" + page.filter + "\u201d" : "") + "; next page from offset " + page.next_offset + ".";
  }
  function fromForm() {
    var mode = $("from").value, at = $("at").value.trim();
    if (mode === "offset") return { offset: at || "0" };
    if (mode === "time") {
      var ms = /^\d+$/.test(at) ? at : String(Date.parse(at));
      return { timestamp: ms };
    }
    return {};
  }

  if ($("browse")) {
    call("GET", "/api/v1/topics/" + encodeURIComponent(topic)).then(function (t) {
      t.partitions.forEach(function (p) {
        var o = document.createElement("option");
        o.value = o.textContent = String(p.partition);
        $("partition").appendChild(o);
      });
      return browse({});
    });
    $("browse").addEventListener("submit", function (e) { e.preventDefault(); browse(fromForm()); });
    $("format").addEventListener("change", function () { if (last) render(last); });
    $("prev").addEventListener("click", function () {
      if (last) browse({ offset: String(Math.max(last.log_start, last.from - Number($("limit").value || 50))) });
    });
    $("next").addEventListener("click", function () { if (last) browse({ offset: String(last.next_offset) }); });
  }

  if ($("produce")) {
    $("produce").addEventListener("submit", function (e) {
      e.preventDefault();
      var rec = { value: $("produce-value").value, headers: lines($("produce-headers").value) };
      if ($("produce-key").value !== "") rec.key = $("produce-key").value;
      if ($("produce-partition").value !== "") rec.partition = Number($("produce-partition").value);
      call("POST", "/api/v1/topics/" + encodeURIComponent(topic) + "/records", rec).then(function (r) {
        $("produce-result").textContent = "Produced to partition " + r.partition + " at offset " + r.offset + ".";
      });
    });
  }

  if ($("delete-topic")) {
    $("delete-topic").addEventListener("submit", function (e) {
      e.preventDefault();
      if ($("delete-confirm").value !== topic) { showError("Type the topic's name to confirm its deletion."); return; }
      call("DELETE", "/api/v1/topics/" + encodeURIComponent(topic)).then(function () {
        $("delete-result").textContent = "Topic " + topic + " deleted.";
      });
    });
  }

  if ($("create-topic")) {
    $("create-topic").addEventListener("submit", function (e) {
      e.preventDefault();
      var req = { name: $("create-name").value.trim(), configs: {} };
      if ($("create-partitions").value) req.partitions = Number($("create-partitions").value);
      if ($("create-rf").value) req.replication_factor = Number($("create-rf").value);
      lines($("create-configs").value).forEach(function (c) { req.configs[c.key] = c.value; });
      call("POST", "/api/v1/topics", req).then(function (r) {
        $("create-result").textContent = "Topic " + r.topic + " created with " + r.partitions + " partitions.";
        location.href = "/topics/" + encodeURIComponent(r.topic);
      });
    });
  }

  if ($("reset")) {
    $("reset").addEventListener("submit", function (e) {
      e.preventDefault();
      var req = { topic: $("reset-topic").value.trim(), to: $("reset-to").value.trim(), dry_run: $("reset-dry").checked };
      var ps = $("reset-partitions").value.trim();
      if (ps && ps !== "all") req.partitions = ps.split(",").map(Number);
      call("POST", "/api/v1/groups/" + encodeURIComponent(group) + "/reset-offsets", req).then(function (r) {
        var tb = $("reset-result").tBodies[0];
        tb.textContent = "";
        r.partitions.forEach(function (p) {
          var tr = document.createElement("tr");
          cell(tr, String(p.partition), "num");
          cell(tr, p.old === null ? "none" : String(p.old), "num");
          cell(tr, String(p.new), "num");
          tb.appendChild(tr);
        });
        $("reset-status").textContent = r.dry_run ? "Dry run: nothing changed." :
          "Offsets of group " + r.group + " on " + r.topic + " reset.";
      });
    });
  }

  if ($("delete-group")) {
    $("delete-group").addEventListener("submit", function (e) {
      e.preventDefault();
      if ($("delete-group-confirm").value !== group) { showError("Type the group's id to confirm its deletion."); return; }
      call("DELETE", "/api/v1/groups/" + encodeURIComponent(group)).then(function () {
        $("delete-group-result").textContent = "Group " + group + " deleted.";
      });
    });
  }

  // The data pages' forms (pages_admin.go): data-api="METHOD PATH" sends the form's
  // fields as a JSON object (a number input as a number, "entity.T" fields as the
  // object entity {T: name}, "<default>" as null, empty fields left out), or no body
  // with data-nobody; the page reloads to show the change.
  document.querySelectorAll("form[data-api]").forEach(function (f) {
    f.addEventListener("submit", function (e) {
      e.preventDefault();
      var api = f.dataset.api, sp = api.indexOf(" ");
      var body = {};
      Array.prototype.forEach.call(f.elements, function (el) {
        if (!el.name || el.value === "") return;
        var v = el.type === "number" ? Number(el.value) : el.value;
        // data-kv: KEY=VALUE lines as an object; data-list: comma-separated names as an array.
        if (el.dataset.kv !== undefined) {
          var kv = {};
          el.value.split("\n").forEach(function (line) {
            var eq = line.indexOf("=");
            if (eq > 0) kv[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
          });
          body[el.name] = kv;
          return;
        }
        if (el.dataset.list !== undefined) {
          body[el.name] = el.value.split(",").map(function (x) { return x.trim(); }).filter(function (x) { return x !== ""; });
          return;
        }
        var dot = el.name.indexOf(".");
        if (dot > 0) {
          var k = el.name.slice(0, dot);
          body[k] = body[k] || {};
          body[k][el.name.slice(dot + 1)] = v === "<default>" ? null : v;
          return;
        }
        body[el.name] = v;
      });
      call(api.slice(0, sp), api.slice(sp + 1), f.dataset.nobody !== undefined ? undefined : body).then(function () {
        location.reload();
      });
    });
  });
})();
