/** Navigation inside the console, for views and forms (main.ts registers the renderer). */
let renderer: (moveFocus: boolean) => Promise<void> = async () => undefined;
let flash: string | undefined;

export function setRenderer(render: (moveFocus: boolean) => Promise<void>): void {
  renderer = render;
}

/** Shows `message` (an action's outcome) at the top of the next view. */
export function flashNext(message: string): void {
  flash = message;
}

/** The message left for this view, once. */
export function takeFlash(): string | undefined {
  const message = flash;
  flash = undefined;
  return message;
}

/** Goes to a path of the console, as a link would; `replace` stays on the same history entry (filters, paging). */
export function navigate(path: string, replace = false): Promise<void> {
  if (replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  return renderer(true);
}

/** Draws the current view again (after an action changed what it shows). */
export function refresh(): Promise<void> {
  return renderer(false);
}
