// moot's pages: the one script. It follows a running debate through the server-sent events of
// /api/runs/ID/events, adding each completed call to the live table, and reloads the page when
// the debate is done. Text goes in with textContent, never as HTML.
(function () {
  "use strict";
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
