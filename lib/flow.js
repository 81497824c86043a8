// The queue between a native operation's events and the consumer that pulls them, with
// back-pressure: once more than `high` (counted by `cost`) waits here, native.control
// pauses the operation (it stops reading its source, so the command or the transfer is
// held back); once the queue is below `low` again it resumes. execStream (runtime.js)
// and exportTree (tree.js) pull through one each.
import { native } from "./native.js";

const PAUSE = 1;
const RESUME = 0;

export function eventQueue(token, { high, low, cost }) {
  const items = [];
  let size = 0;
  let paused = false;
  let wake;
  const poke = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  return {
    push(item) {
      items.push(item);
      size += cost(item);
      if (!paused && size > high) {
        paused = true;
        native.control(token, PAUSE);
      }
      poke();
    },
    // The next item, or undefined when none waits.
    shift() {
      const item = items.shift();
      if (item !== undefined) {
        size -= cost(item);
        if (paused && size < low) {
          paused = false;
          native.control(token, RESUME);
        }
      }
      return item;
    },
    get length() {
      return items.length;
    },
    // Wakes the consumer waiting in wait() (something was pushed, or the operation ended).
    poke,
    wait() {
      return new Promise((resolve) => (wake = resolve));
    },
  };
}
