// Preloaded with `node -r ./client-aborts.js ...` for kinesalite, which rethrows the 'error' of
// an incoming request (`req.on('error', function (err) { throw err })`): a client killed in the
// middle of a request (the crash tests kill -9 whole runs, many GetRecords in flight) would take
// the emulator down with it. AWS does not go down when a client goes away; neither does this.
'use strict'
process.on('uncaughtException', (err) => {
  if (err && (err.code === 'ECONNRESET' || err.message === 'aborted')) {
    return // that request is gone; the server and every other request go on
  }
  console.error(err)
  process.exit(1)
})
