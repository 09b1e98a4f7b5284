// @ts-check
// The runtime event listeners: pages subscribe here, and app.js, which follows `/v1/events` once
// for the whole UI, hands each event of that stream to them. Imports nothing, so every page may
// use it without importing app.js (which imports the pages).

/** @typedef {import("./types.js").RuntimeEvent} RuntimeEvent */
/** @typedef {import("./types.js").EventEnvelope} EventEnvelope */
/** @typedef {(event: RuntimeEvent, frame: EventEnvelope) => void} RuntimeListener */

/** @type {Set<RuntimeListener>} */
const listeners = new Set();

/** Pages subscribe to runtime events (approval.*, option.*, tool.call.*, daemon.*) through this.
 *  @param {RuntimeListener} listener @returns {() => void} */
export function onRuntimeEvent(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Hands one event of the stream to every listener (app.js, which follows the stream).
 *  @param {RuntimeEvent} event @param {EventEnvelope} frame */
export function announceRuntimeEvent(event, frame) {
  for (const listener of listeners) listener(event, frame);
}
