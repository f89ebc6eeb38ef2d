throw new Error(
  'sqlite3 is not installed in this repository: @keyv/test-suite lists it but does not use it',
)
