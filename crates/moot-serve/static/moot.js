// moot's pages: the one script, over the JSON API. The start form posts to /api/runs and opens
// the new run (without the script, the form posts to /new, which does the same). A running
// debate's page follows /api/runs/ID/events, adding each completed call to the live table, and
// reloads when the debate is done. Text goes in with textContent, never as HTML.
(function () {
  "use strict";
  var form = document.querySelector("form.new");
  if (form && window.fetch) {
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      var data = new FormData(form);
      var body = { question: data.get("question"), options: {} };
      if (data.get("protocol")) { body.protocol = data.get("protocol"); }
      ["agents", "rounds"].forEach(function (k) {
        var v = String(data.get(k) || "").trim();
        if (v !== "") { body[k] = Number(v); }
      });
      var picked = data.getAll("pick");
      if (picked.length > 0) { body.agents = picked; }
      var shown = document.getElementById("form-error");
      var bad = null;
      String(data.get("options") || "").split("\n").forEach(function (line) {
        var at = line.indexOf("=");
        if (line.trim() === "") { return; }
        if (at > 0) {
          body.options[line.slice(0, at).trim()] = line.slice(at + 1).trim();
        } else if (bad === null) {
          bad = "options: " + JSON.stringify(line.trim()) + " is not KEY=VALUE";
        }
      });
      if (bad !== null) {
        shown.textContent = bad;
        shown.hidden = false;
        return;
      }
      fetch("/api/runs", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
        credentials: "same-origin"
      }).then(function (r) {
        return r.json().then(function (j) { return { ok: r.ok, j: j }; });
      }).then(function (res) {
        if (res.ok) {
          window.location.assign("/runs/" + res.j.run_id);
        } else {
          shown.textContent = res.j.error || "the debate could not start";
          shown.hidden = false;
        }
      }).catch(function (err) {
        shown.textContent = String(err);
        shown.hidden = false;
      });
    });
  }
  var live = document.getElementById("live");
  if (!live || !window.EventSource) { return; }
  var run = live.getAttribute("data-run");
  var body = document.getElementById("live-calls");
  var source = new EventSource("/api/runs/" + run + "/events");
  function cell(row, text) {
    var td = document.createElement("td");
    td.textContent = text;
    row.appendChild(td);
  }
  source.addEventListener("call", function (e) {
    var c = JSON.parse(e.data);
    var row = document.createElement("tr");
    row.className = "live-call";
    cell(row, String(c.round));
    cell(row, c.agent_id + (c.slot === "answer" ? "" : " (" + c.slot + ")"));
    cell(row, c.answer === null ? "(" + c.status + ")" : String(c.answer).split("\n")[0]);
    cell(row, c.input_tokens + "/" + c.output_tokens);
    cell(row, String(c.ms));
    body.appendChild(row);
  });
  source.addEventListener("done", function (e) {
    source.close();
    var d = JSON.parse(e.data);
    document.getElementById("status").textContent = d.status;
    window.setTimeout(function () { window.location.reload(); }, 300);
  });
  source.onerror = function () { /* the browser reconnects by itself */ };
})();
