// Every layer throws `StrataError`; importing the bytes layer brings the error vocabulary with it.
@_exported import StrataBase
