"""The error hierarchy shared by every codeask package; messages are written for users."""


class CodeaskError(Exception):
    """Base class: the message says what happened and what the user can do about it."""


class ConfigError(CodeaskError):
    """A setting is missing or invalid."""


class IndexingError(CodeaskError):
    """A repository could not be read or indexed."""


class AccessDenied(CodeaskError):
    """The asker may not read what was requested."""


class UpstreamUnavailable(CodeaskError):
    """A service we depend on (GitHub, OpenSearch, the LLM provider) is down or refused us."""


class StoreUnavailable(UpstreamUnavailable):
    """The search store cannot be reached or failed a request."""


class InvalidInput(CodeaskError):
    """A request or payload was malformed."""
