#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""gpushare's enum values from Python, the way docs/user-guide.md shows:
gpusharesink's client-removed reason read with .value_nick and int ()
(str () and repr () of it raise in PyGObject 3.42: the type has no
introspection data), and an enum property read as any other.

    python3 python-enums.py SOCKET

Prints 'client-removed goodbye 0' and 'policy auto'."""

import sys

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

Gst.init(None)
path = sys.argv[1]
producer = Gst.parse_launch(
    "videotestsrc is-live=true ! video/x-raw,width=64,height=48 ! "
    "gpusharesink name=sink")
sink = producer.get_by_name("sink")
sink.set_property("socket-path", path)
removed = []


def on_removed(element, client_id, reason):
    # the documented way: the nick (a stable string) or the number
    removed.append((reason.value_nick, int(reason)))


sink.connect("client-removed", on_removed)
producer.set_state(Gst.State.PLAYING)
consumer = Gst.parse_launch("gpusharesrc name=src num-buffers=3 ! fakesink")
consumer.get_by_name("src").set_property("socket-path", path)
consumer.set_state(Gst.State.PLAYING)
msg = consumer.get_bus().timed_pop_filtered(
    10 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
consumer.set_state(Gst.State.NULL)
deadline = 100
while not removed and deadline > 0:
    # the removal is signalled from the producer's control thread
    msg2 = producer.get_bus().timed_pop(50 * Gst.MSECOND)
    deadline -= 1
for nick, value in removed:
    print(f"client-removed {nick} {value}")
print(f"policy {sink.get_property('policy').value_nick}")
producer.set_state(Gst.State.NULL)
sys.exit(0 if msg and msg.type == Gst.MessageType.EOS and removed else 1)
