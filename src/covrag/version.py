"""covrag's version, in a module of its own so that any layer may read it without importing the
package's top-level verbs (``covrag/__init__.py`` composes the pipeline)."""

__version__ = "0.1.0"
