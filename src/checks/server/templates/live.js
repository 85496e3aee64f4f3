// Live updates in place (issue 47; server/live.py). The element marked data-live-every names how
// often, in seconds, the page asks its own address with ?live=1 for its live parts; each part
// replaces the content of the element with its id. Focus never moves: a part that holds the
// focus waits until the focus leaves it. The pause button stops the updates until it is pressed
// again; a part inside an aria-live region (role="status") is announced by screen readers.
"use strict";
(function () {
  const control = document.querySelector("[data-live-every]");
  if (!control) return;
  const every = 1000 * Number(control.dataset.liveEvery || 2);
  const toggle = control.querySelector("button.live-toggle");
  const state = control.querySelector(".live-state");
  let paused = false;
  let finished = false;
  let timer = null;

  function say(text) {
    if (state) state.textContent = text;
  }

  function schedule(delay) {
    clearTimeout(timer);
    timer = setTimeout(update, delay);
  }

  function same(element, html) {
    const incoming = document.createElement("template");
    incoming.innerHTML = html;
    return incoming.innerHTML === element.innerHTML;
  }

  async function update() {
    if (paused) return;
    const address = new URL(window.location.href);
    address.searchParams.set("live", "1");
    let data;
    try {
      const reply = await fetch(address, {credentials: "same-origin", cache: "no-store",
                                           headers: {"Accept": "application/json"}});
      if (!reply.ok) throw new Error("status " + reply.status);
      data = await reply.json();
    } catch (error) {
      say("Live updates failed (" + error.message + "); trying again. Reload the page to see the latest.");
      schedule(every * 3);
      return;
    }
    if (paused) return;
    let waiting = false;
    for (const [id, html] of Object.entries(data.parts)) {
      const element = document.getElementById(id);
      if (!element || same(element, html)) continue;
      if (element.contains(document.activeElement) && document.activeElement !== document.body) {
        waiting = true;  // never take the focus away: this part is brought up to date once it leaves
        continue;
      }
      element.innerHTML = html;
    }
    if (data.done && !waiting) {
      finished = true;  // the button stays where it is (it may hold the focus), with nothing left to pause
      toggle.setAttribute("aria-disabled", "true");
      toggle.textContent = "No more updates";
      say("Up to date: nothing changes on this page any more.");
      return;
    }
    schedule(every);
  }

  toggle.hidden = false;
  toggle.addEventListener("click", function () {
    if (finished) return;
    paused = !paused;
    toggle.setAttribute("aria-pressed", String(paused));
    toggle.textContent = paused ? "Resume live updates" : "Pause live updates";
    say(paused ? "Live updates paused." : "Live updates on.");
    if (!paused) schedule(0);
  });
  say("This page updates itself every " + every / 1000 + " s.");
  schedule(every);
})();
