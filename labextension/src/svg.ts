/** The few SVG helpers the charts share (the dashboard's and the roofline). */

export const SVG = 'http://www.w3.org/2000/svg';

/** A chart's root: `width` user units wide, as wide as the output allows, never wider. */
export function svgRoot(height: number, width: number): SVGSVGElement {
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.setAttribute('width', '100%');
  svg.setAttribute('class', 'jp-JitDashboard-chart');
  svg.style.maxWidth = `${width}px`;
  return svg;
}

/** An SVG element; a mark with a `data-tip` is also labelled for screen readers. */
export function svgEl(
  tag: string,
  attrs: { [k: string]: string | number },
  text?: string
): SVGElement {
  const node = document.createElementNS(SVG, tag);
  for (const k of Object.keys(attrs)) {
    node.setAttribute(k, String(attrs[k]));
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  if (attrs['data-tip']) {
    node.setAttribute('role', 'img'); // screen readers get what the hover shows
    node.setAttribute('aria-label', String(attrs['data-tip']));
  }
  return node;
}
