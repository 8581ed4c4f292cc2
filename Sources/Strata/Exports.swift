// What users of `import Strata` see of the layers below: their `public` declarations (errors,
// values, options, statistics). Everything a layer shares only with the layers above it is
// `package`, and stays out of the library's API.
@_exported import StrataEngine
@_exported import StrataFiles
@_exported import StrataFormat
