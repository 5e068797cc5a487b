"""`verify selftest`: the harness measures its own detection power on faults planted on purpose.

- ``faults``: token-level faults (substitute, delete, insert, a bytes-preserving boundary shift)
  and the vocabulary table they draw from;
- ``injector``: the fault configuration, the ``faulty:`` spec and the injector that decides
  what each input gets (the Unicode class flip and the history fault included);
- ``engine``: the ``faulty:`` engine adapter (registry entry ``faulty``) and its sessions;
- ``inputs``: the self-test's own corpus and session traces;
- ``run``: the driver (pipeline runs, ground truth, matching findings to faults);
- ``shadow_model``: requests a shadow sample needs to catch a share of faults;
- ``report``: ``OUT/selftest.json`` and ``OUT/selftest.md``.
"""
