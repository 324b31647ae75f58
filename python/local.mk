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
