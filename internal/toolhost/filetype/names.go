package filetype

// referenceNames maps the names mimetype reports to the names boxsh v3 uses
// for the same formats. Whole families that boxsh v3 reports under one name
// (OLE compound files, Matroska, ELF) are folded into that name; refinements
// boxsh v3 has no name for (OOXML inside ZIP, Ogg video, 3GPP inside
// ISO-BMFF, ...) keep mimetype's name.
var referenceNames = map[string]string{
	// Images.
	"image/apng": "image/png", // an APNG is a valid PNG (its first frame)
	"image/jxr":  "image/vnd.ms-photo",

	// Audio and video.
	"audio/musepack":  "audio/x-musepack",
	"audio/x-unknown": "audio/x-voc", // mimetype's name for Creative Voice
	"video/matroska":  "video/x-matroska",
	"video/webm":      "video/x-matroska",

	// Archives and compressed data.
	"application/vnd.rar":                   "application/x-rar-compressed",
	"application/lzip":                      "application/x-lzip",
	"application/vnd.debian.binary-package": "application/x-deb",

	// OLE compound files (msi, doc, xls, ppt, pub, msg).
	"application/x-ole-storage":     "application/x-cfb",
	"application/x-ms-installer":    "application/x-cfb",
	"application/msword":            "application/x-cfb",
	"application/vnd.ms-excel":      "application/x-cfb",
	"application/vnd.ms-powerpoint": "application/x-cfb",
	"application/vnd.ms-publisher":  "application/x-cfb",
	"application/vnd.ms-outlook":    "application/x-cfb",

	// Documents and databases.
	"application/vnd.apache.parquet": "application/x-parquet",
	"application/vnd.sqlite3":        "application/x-sqlite3",

	// Executables.
	"application/x-elf":                             "application/x-executable",
	"application/x-object":                          "application/x-executable",
	"application/x-sharedlib":                       "application/x-executable",
	"application/x-coredump":                        "application/x-executable",
	"application/vnd.microsoft.portable-executable": "application/x-dosexec",
	"application/x-java-applet":                     "application/java-vm",
	"application/vnd.nintendo.snes.rom":             "application/x-nes-rom",
}

// alwaysBinary lists the formats reported as binary even when their head is
// plain text. boxsh v3 treats them as binary documents rather than as text to
// display.
var alwaysBinary = map[string]bool{
	"application/pdf":        true,
	"application/postscript": true,
}
