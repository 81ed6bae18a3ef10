// The anywidget model API the widgets use (get, set, save_changes, on/off, send: anywidget's own
// types, @anywidget/types) and the render({model, el}) contract, with the custom messages typed by
// wire.d.ts (generated from nnx_lab/widgets/wire.py). Types only: nothing here is bundled.
import type { AnyModel } from "@anywidget/types";
import type { ToBrowser, ToPython } from "./wire";

/** A widget's synced traits by name (typed loosely: each widget's Python defines them). */
export type Traits = Record<string, any>;

/** The model a widget's render gets: what Python sends and takes is typed by wire.d.ts. */
export interface Model<T extends Traits = Traits> extends Omit<AnyModel<T>, "send" | "on"> {
  send(content: ToPython, callbacks?: unknown, buffers?: ArrayBuffer[] | ArrayBufferView[]): void;
  on(eventName: "msg:custom", callback: (msg: ToBrowser, buffers: DataView[]) => void): void;
  on(eventName: `change:${string}`, callback: () => void): void;
}

/** What anywidget passes to a widget's render; it may return a cleanup. */
export interface RenderProps<T extends Traits = Traits> {
  model: Model<T>;
  el: HTMLElement;
}
export type Render<T extends Traits = Traits> = (props: RenderProps<T>) => void | (() => void);
