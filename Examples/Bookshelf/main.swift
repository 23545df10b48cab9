// Bookshelf: a small end-to-end PersistenceKit program. Run it with `swift run Bookshelf`.
//
// It builds a model from two classes, loads a file store in a temporary folder, and on a
// background context inserts, lists, edits and deletes books, while the main-queue view
// context follows along through automatic merges. See Bookshelf.swift for the steps.

import Foundation

do {
    try await runBookshelf()
} catch {
    print("Bookshelf failed: \(error)")
    exit(1)
}
