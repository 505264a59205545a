import Foundation
import Logging
import ServiceLifecycle
import TablecastServer
import UnixSignals

/// `tablecast serve` as the one service of the command's group: it starts the server, serves until graceful
/// shutdown (SIGTERM, SIGINT), and reloads the TLS certificate and the access files on each SIGHUP meanwhile.
struct ServeService: Service, CustomStringConvertible {
    let configuration: TableServer.Configuration
    let staticDir: String?
    let tlsCert: String?
    /// The tokens file and signed tokens' keys, read again on SIGHUP.
    let access: AccessFiles
    /// Trapped before the group starts (see `ServeCommand.run()`).
    let hangups: UnixSignalsSequence
    let logger: Logger

    /// How the group's log names it: never the configuration, which holds the tokens.
    var description: String { "tablecast serve" }

    func run() async throws {
        let server = try await TableServer.start(configuration, logger: logger)
        if let staticDir {
            logger.info(
                "serving the page from \(URL(fileURLWithPath: staticDir).standardizedFileURL.path) (--static-dir)")
        } else {
            logger.info("serving the page built into the executable")
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            group.addTask { await reload(server) }
            // The server returns after graceful shutdown; the reloads end with it.
            try await group.next()
            group.cancelAll()
        }
    }

    private func reload(_ server: TableServer) async {
        for await _ in hangups.cancelOnGracefulShutdown() {
            guard configuration.tls != nil || access.configured else {
                logger.notice("SIGHUP: nothing to reload (no --tls-cert, --tokens or signed-token keys)")
                continue
            }
            if configuration.tls != nil {
                do {
                    try await server.reloadCertificates()
                    logger.notice("reloaded the TLS certificate", metadata: ["certificate": "\(tlsCert ?? "")"])
                } catch {
                    logger.error("kept the current TLS certificate: \(error)")
                }
            }
            if access.configured {
                do {
                    let closed = await server.replacePolicy(try await access.load())
                    logger.notice(
                        "reloaded the tokens and keys", metadata: ["connections_closed": .stringConvertible(closed)])
                } catch {
                    // A half-edited file must not lock everyone out, nor let anyone in.
                    logger.error("kept the current tokens and keys: \(error)")
                }
            }
        }
    }
}
