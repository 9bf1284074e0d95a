"""Report: figures and the HTML report, as functions of the catalog.

Every figure and table of the paper (``figures``), the plotting primitives
(``plots``), the report page (``html``) and the ``figures`` command.  Reads
the catalog; never makes runs or imports the sweep.  Imports only the
layers below: results, run, describe and the base modules."""
