# Type stubs of moot's extension module (crates/moot-py/src/lib.rs). Results cross as JSON
# text; the package around it (moot/__init__.py) turns them into objects and tables.
from typing import List, Optional

__version__: str

class MootError(Exception): ...
class InputError(MootError): ...
class ConfigError(InputError): ...
class StoreError(MootError): ...

class Cancel:
    def __init__(self) -> None: ...
    def cancel(self) -> None: ...
    @property
    def cancelled(self) -> bool: ...

class Store:
    def __init__(self, location: Optional[str] = None) -> None: ...
    def runs(
        self,
        protocol: Optional[str] = None,
        answer: Optional[str] = None,
        since: Optional[str] = None,
        until: Optional[str] = None,
        offset: int = 0,
        limit: int = 100,
    ) -> str: ...
    def run(self, run_id: str) -> str: ...
    def calls(self, run_id: str) -> str: ...
    def decide(self, run_id: str, rule: Optional[str] = None) -> str: ...
    def close(self) -> None: ...

def ask(
    store: Store,
    question: str,
    *,
    protocol: Optional[str] = None,
    agents: Optional[int] = None,
    rounds: Optional[int] = None,
    config_path: Optional[str] = None,
    config_text: Optional[str] = None,
    sim: bool = False,
    gold: Optional[str] = None,
    options: List[str] = ...,
    answer: Optional[str] = None,
    choices: List[str] = ...,
    tests: Optional[str] = None,
    context: Optional[str] = None,
    require_passing: bool = False,
    cancel: Optional[Cancel] = None,
) -> str: ...
def bench(
    store: Store,
    dataset: str,
    protocols: List[str],
    *,
    limit: Optional[int] = None,
    seed: int = ...,
    concurrency: int = 4,
    rounds: Optional[int] = None,
    agents: Optional[int] = None,
    sim: bool = False,
    name: Optional[str] = None,
    data_dir: Optional[str] = None,
    config_path: Optional[str] = None,
    config_text: Optional[str] = None,
    options: List[str] = ...,
    no_cache: bool = False,
    sc_at_budget: bool = False,
    detach: bool = False,
    skip_invalid: bool = False,
    cancel: Optional[Cancel] = None,
) -> str: ...

def fork(
    store: Store,
    parent: str,
    round: int,
    *,
    agent: Optional[str] = None,
    say: Optional[str] = None,
    model: Optional[str] = None,
    config_path: Optional[str] = None,
    config_text: Optional[str] = None,
    cancel: Optional[Cancel] = None,
) -> str: ...

def fork_bench(
    store: Store,
    parent: str,
    round: int,
    *,
    agent: Optional[str] = None,
    say: Optional[str] = None,
    say_wrong: bool = False,
    model: Optional[str] = None,
    name: Optional[str] = None,
    concurrency: int = 4,
    config_path: Optional[str] = None,
    config_text: Optional[str] = None,
    cancel: Optional[Cancel] = None,
) -> str: ...
