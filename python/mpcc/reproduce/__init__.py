"""Paper reproductions: ``mpcc reproduce peng2016 | tang2010 | jiang2011``."""
