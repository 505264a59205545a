import Foundation

extension TableStore {
    /// What a backup copy holds.
    public struct BackupReport: Sendable {
        /// The copy's size in bytes.
        public var bytes: Int64
        /// Every table in the copy, with the version it holds.
        public var tables: [TableInfo]
    }

    /// Copies the store at `source` into a new file at `destination`, consistently, while a server keeps writing
    /// to it: SQLite's online backup API reads the database as of one commit. The copy is written beside
    /// `destination`, synced, checked by opening it as a store, and only then renamed into place, so a failed or
    /// interrupted backup never leaves a partial file under that name. `destination` must not exist.
    ///
    /// Restoring is starting a server on the copy.
    public static func backup(from source: String, to destination: String) throws -> BackupReport {
        guard !FileManager.default.fileExists(atPath: destination) else {
            throw StoreError(.io, "\(destination) already exists; a backup never replaces a file")
        }
        var options = TableStoreOptions()
        options.readOnly = true
        options.checkIntegrityOnOpen = false
        let store = try TableStore(path: source, options: options)
        defer { try? store.close() }
        let partial = destination + ".partial"
        try? FileManager.default.removeItem(atPath: partial)
        do {
            let copy = try SQLiteConnection(path: partial)
            try store.connection.backup(into: copy)
            // The copy of a WAL database is marked WAL; keep it a single self-contained file.
            try copy.execute("PRAGMA journal_mode = DELETE")
            copy.close()
        } catch let error as SQLiteError {
            try? FileManager.default.removeItem(atPath: partial)
            throw StoreError(error, while: "copying \(source) to \(partial)")
        }
        return try install(partial, as: destination)
    }

    /// Checks that the copy at `partial` opens as a store, renames it to `destination` and makes that durable; on
    /// failure removes it.
    static func install(_ partial: String, as destination: String) throws -> BackupReport {
        let tables: [TableInfo]
        do {
            var check = TableStoreOptions()
            check.readOnly = true
            let copy = try TableStore(path: partial, options: check)
            tables = try copy.listTables()
            try copy.close()
        } catch {
            try? FileManager.default.removeItem(atPath: partial)
            throw error
        }
        guard rename(partial, destination) == 0 else {
            let reason = String(cString: strerror(errno))
            try? FileManager.default.removeItem(atPath: partial)
            throw StoreError(.io, "cannot rename \(partial) to \(destination): \(reason)")
        }
        syncDirectory(of: destination)
        let attributes = try? FileManager.default.attributesOfItem(atPath: destination)
        return BackupReport(bytes: (attributes?[.size] as? NSNumber)?.int64Value ?? 0, tables: tables)
    }

    /// Makes the rename durable: a directory entry is only on disk once the directory is synced.
    private static func syncDirectory(of path: String) {
        let directory = (path as NSString).deletingLastPathComponent
        let descriptor = open(directory.isEmpty ? "." : directory, O_RDONLY)
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        Foundation.close(descriptor)
    }
}
