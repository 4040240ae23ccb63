"""A local NMC as supervised child processes: `LocalStack` (see nmc.stack.local)."""

from nmc.stack.local import LocalStack, StackError

__all__ = ["LocalStack", "StackError"]
