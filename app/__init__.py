"""The desktop app. Importing it guards the interpreter against a PySide6 refcount bug (see qt_refcounts)."""

from spokenbench.app.qt_refcounts import make_singletons_immortal

make_singletons_immortal()
