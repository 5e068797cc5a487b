"""Engines with a fault planted on purpose: the real reference with one thing changed (a
token substituted, deleted or inserted, a boundary moved, a character class from another
Unicode table, a history-dependent fault). The harness measures itself with them
(``verify selftest``, the recall benchmarks): finding such a fault proves it would find the
real one.

  faults.py          token-level faults, chosen deterministically per input
  injector.py        FaultInjector: which inputs get which fault (``faulty:INNER?kind=...``)
  faulty.py          the ``faulty:`` adapter wrapping any engine with an injector
  unicode_tables.py  the real ranks and pattern with one class from another Unicode table
"""
