"""A link's hold on its host's lease (abtui.remote.lease builds the commands and reads the
replies): taken in a new control shell, before its bulk loop starts; on a first connect in the
link's turn of the hosts' one order (LeaseOrder: two controllers started together never both
lose); one held by a controller that is gone (this link before a reconnect, an ended process of
this machine) or silent (stale) taken over. HostLink keeps what it got (path, note) and the
heartbeat that keeps it fresh.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from abtui.core.errors import LeaseHeld, LeaseRefused, lease_not_asked
from abtui.remote.control_shell import ControlShell
from abtui.remote.lease import (
    TAKEOVER_WAIT_S,
    WAIT_S,
    LeaseOrder,
    LeaseReply,
    LeaseState,
    bad_line,
    gone,
    name_command,
    parse_reply,
    take_command,
    takeover_command,
)


async def take_lease(shell: ControlShell, *, alias: str, dirs: tuple[str, ...], link_id: str,
                     timeout: float, order: LeaseOrder | None,
                     named: Callable[[], None]) -> LeaseReply:
    """The lease taken in `shell` (its reply: TAKEN, or none to take, with why); LeaseHeld
    when another controller holds it, LeaseRefused when something else is at its name, and
    `lease_not_asked` when a host before it in `order` was refused. `named` is called once
    this link named its file to `order` (it then owes the order its outcome)."""
    key, refused, was_named = "", None, False
    try:
        if order is not None:
            async with asyncio.timeout(timeout):
                shell.send_bare(name_command(dirs))
                key = (await shell.result()).stdout.strip()
            was_named = True
            named()
            before = await order.turn(key)  # the hosts before it: their own timeouts
            if before is not None:
                refused = before
                raise lease_not_asked(alias, before)
        async with asyncio.timeout(timeout + TAKEOVER_WAIT_S + WAIT_S):
            shell.send_bare(take_command(dirs=dirs, link=link_id))
            reply = parse_reply((await shell.result()).stdout)
            if reply.state is LeaseState.HELD and reply.holder is not None and (
                    gone(reply.holder, reply.link, link_id) or reply.stale):
                shell.send_bare(takeover_command(
                    reply, dirs=dirs, link=link_id,
                    stale=not gone(reply.holder, reply.link, link_id)))
                reply = parse_reply((await shell.result()).stdout)
        if reply.state is LeaseState.HELD:  # (something else at its name: not another's)
            refused = f"{alias} (before it) is driven by {reply.holder_text()}"
            raise LeaseHeld(alias, reply.holder_text())
        if reply.state is LeaseState.BAD:
            raise LeaseRefused(alias, bad_line(reply))
        return reply
    finally:
        if order is not None and was_named:
            order.done(key, refused)
