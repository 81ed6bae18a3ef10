"""What a browser view of a StateViewer holds: the ``snapshot`` trait, with the statistics of the
latest "stats" message applied (the front end's ``withStats``), decoded here as the browser does."""

import numpy as np


class Wire:
    def __init__(self, viewer):
        self.viewer, self.messages = viewer, []
        send = viewer.send

        def recording_send(content, buffers=None):
            self.messages.append((content, buffers))
            return send(content, buffers)

        viewer.send = recording_send

    def stats_messages(self) -> list:
        return [(c, b) for c, b in self.messages if c.get("type") == "stats"]

    def stats(self) -> dict:
        """The statistics the browser shows: column name -> list (None: none)."""
        snap = self.viewer.snapshot
        newer = [
            (c, b)
            for c, b in self.stats_messages()
            if c["structure"] == snap["structure"] and c["refresh"] > snap["refresh"]
        ]
        if not newer:
            return snap["stats"]
        content, (buffer, *_series) = newer[-1]  # a second buffer: the series (gradients, optimizer state)
        values = np.frombuffer(bytes(buffer), np.float32).reshape(len(content["names"]), content["rows"])
        out = {name: [None if np.isnan(v) else float(v) for v in values[j]] for j, name in enumerate(content["names"])}
        for row, exact in content["exact"].items():
            for j, name in enumerate(content["names"]):
                out[name][int(row)] = exact[j]
        return out
