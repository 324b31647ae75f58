# SPDX-License-Identifier: BSD-3-Clause
# python/: the dlpar Python module, pure Python over libdlpar.so (ctypes),
# installed for the system python3 (configure --with-python-dir). Its
# _library.py is written at install time with the installed libdlpar's path.
dlparpydir = $(DLPAR_PYTHONDIR)/dlpar
dlparpy_DATA = python/dlpar/__init__.py python/dlpar/torch.py python/dlpar/stop.py python/dlpar/_find.py \
  python/dlpar/__main__.py
EXTRA_DIST += $(dlparpy_DATA) python/dlpar/_library.py python/README.md python/pyproject.toml
install-data-hook: install-dlpar-python-library
install-dlpar-python-library:
	$(MKDIR_P) "$(DESTDIR)$(dlparpydir)"
	printf '"""Where libdlpar.so is (written by make install; DLPAR_LIBRARY overrides it)."""\nPATH = "%s"\n' \
	  "$(libdir)/libdlpar.so.0" >"$(DESTDIR)$(dlparpydir)/_library.py"
uninstall-local: uninstall-dlpar-python-library
uninstall-dlpar-python-library:
	rm -f "$(DESTDIR)$(dlparpydir)/_library.py"
# The module as a wheel beside the package's other data (PKGDATADIR), so a
# venv or conda user installs it with pip and no network, also from the
# .deb: pip install /usr/share/dlpar/dlpar-VERSION-py3-none-any.whl. pip
# cannot build from a read-only tree such as /usr/share, hence a wheel.
# It is built from a copy of python/ by setuptools' PEP 517 backend; the
# wheel's name carries pyproject.toml's version, so a version that differs
# from configure.ac's fails the build here.
if BUILD_WHEEL
dlparwheeldir = $(pkgdatadir)
dlparwheel_DATA = python/dlpar-$(VERSION)-py3-none-any.whl
CLEANFILES += $(dlparwheel_DATA)
python/dlpar-$(VERSION)-py3-none-any.whl: $(dlparpy_DATA) python/dlpar/_library.py python/pyproject.toml python/README.md
	rm -rf python/wheel.tmp && $(MKDIR_P) python/wheel.tmp/src/dlpar
	cp $(srcdir)/python/pyproject.toml $(srcdir)/python/README.md python/wheel.tmp/src/
	cp $(srcdir)/python/dlpar/*.py python/wheel.tmp/src/dlpar/
	chmod -R u+w python/wheel.tmp
	(cd python/wheel.tmp/src && $(PYTHON_TORCH) -c 'from setuptools import build_meta; build_meta.build_wheel("..")') \
	  >python/wheel.tmp/build.out 2>&1 || { cat python/wheel.tmp/build.out; exit 1; }
	mv python/wheel.tmp/$(@F) $@
	rm -rf python/wheel.tmp
endif
