// Each collection kind's inspector (`SeriesInspector`, `ChannelInspector`, …) lives in the kind's
// folder in Strata; `import StrataInspection` gives them with the generic inspectors here.
@_exported import Strata
