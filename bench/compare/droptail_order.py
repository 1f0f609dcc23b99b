"""The drop-tail order bench (bench/compare/RESULTS.md §1): :mod:`mpcc.compare.droptail_order`,
whose sizes and order check tests/compare/test_droptail_order.py also uses.

    nice -n 10 .venv/bin/python bench/compare/droptail_order.py [--seeds 3] [--jitter S]
"""

from mpcc.compare.droptail_order import main

if __name__ == "__main__":
    main()
