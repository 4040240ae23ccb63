"""A local NMC as supervised child processes: `LocalStack` (see nmc_dev.stack.local)."""

from nmc_dev.stack.local import LocalStack, StackError

__all__ = ["LocalStack", "StackError"]
